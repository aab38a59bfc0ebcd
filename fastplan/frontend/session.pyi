"""Type stubs for the compiled fastplan.frontend.session module (twin of
refimpl.frontend.session)."""

from refimpl.frontend.session import Executor as Executor
from refimpl.frontend.session import Session as _RefSession

class Session(_RefSession): ...
