"""Streams the fuzzer (``fuselab fuzz``) found wrong and that are not fixed yet.

Each is a strict xfail: it fails today, and the day a fix makes it pass the test fails too,
so the fix moves it to the pinned examples of the property that should have drawn it.
"""
