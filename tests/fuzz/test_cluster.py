"""``--cluster``: a campaign on a Dask LocalCluster gives the streams and findings of a local
one."""

from __future__ import annotations

import pytest

from fuselab.fuzz import Config, fuzz

distributed = pytest.importorskip("distributed")


def test_a_campaign_on_a_local_dask_cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        remote = fuzz(Config(seed=2, count=10, cluster=cluster.scheduler_address)).to_json()
    local = fuzz(Config(seed=2, count=10)).to_json()
    assert remote["streams"] == 10
    assert remote["coverage"] == local["coverage"]
    assert remote["buckets"] == local["buckets"] == {}
