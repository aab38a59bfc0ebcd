"""Type stubs for the compiled fastplan.frontend.tensor module (twin of refimpl.frontend.tensor)."""

from refimpl.frontend.tensor import Tensor as _RefTensor

class Tensor(_RefTensor): ...
