"""Endpoints the Mem0 client has that this service does not offer: a clear 501 naming the feature
(after authentication), never a 404 that reads like a wrong host, nor a 500."""
from memory.mem0.identity import Mem0NotSupported
from memory.mem0.views import Mem0Api


class NotSupportedApi(Mem0Api):
    feature = "This endpoint"
    why = ""

    def _refuse(self, request, *args, **kwargs):
        raise Mem0NotSupported(f"{self.feature} is not supported by this memory service{': ' + self.why if self.why else ''}"
                               " (see docs/mem0.md).")

    get = post = put = patch = delete = _refuse


def not_supported(feature: str, why: str = ""):
    return NotSupportedApi.as_view(feature=feature, why=why)
