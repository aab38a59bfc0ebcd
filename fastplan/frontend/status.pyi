"""Type stubs for the compiled fastplan.frontend.status module (twin of
refimpl.frontend.status)."""

from collections.abc import Callable
from typing import Any

from refimpl.frontend.status import BINARY as BINARY
from refimpl.frontend.status import CAT as CAT
from refimpl.frontend.status import CAT_LIST as CAT_LIST
from refimpl.frontend.status import COMPARE as COMPARE
from refimpl.frontend.status import METHOD as METHOD
from refimpl.frontend.status import REFLECTED as REFLECTED
from refimpl.frontend.status import UNARY as UNARY
from refimpl.frontend.status import Operand as Operand

def refcount_calibration() -> dict[str, tuple[int, int]]: ...
def calibrate(probe_session: Callable[[], Any], cat: Callable[..., Any]) -> None: ...
