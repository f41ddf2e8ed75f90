import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from tenancy.db import DatabaseBusy, is_contention

logger = logging.getLogger(__name__)


def api_exception_handler(exc, context):
    response = exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, RequestDataTooBig):
        # Django raises it when a view first reads the body; left alone it became Django's HTML "Bad
        # Request (400)" page, the only error of the API that was not JSON. 413, as MCP answers.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response({"detail": f"The request body is larger than {limit} bytes (MAX_REQUEST_BYTES); "
                                   "nothing was stored.", "code": "request_too_large", "limit": limit}, status=413)
    if isinstance(exc, DatabaseBusy) or is_contention(exc):
        # Lock contention that outlasted the busy timeout and the retries: the database is up and
        # nothing was committed (the transaction rolled back), so the client may simply retry.
        logger.warning("database busy: %s", type(exc).__name__)
        return Response({"detail": "The memory database is busy with other writes; nothing was stored, retry.",
                         "code": "database_busy"}, status=429, headers={"Retry-After": "1"})
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The system of record is unreachable: say so plainly; never fall back to unchecked projections.
        logger.warning("database unavailable: %s", type(exc).__name__)
        return Response({"detail": "The memory database is unavailable; retry later.", "code": "database_unavailable"},
                        status=503, headers={"Retry-After": "5"})
    if isinstance(exc, DatabaseError):
        logger.error("database error: %s", type(exc).__name__)
        return Response({"detail": "The memory database rejected the operation.", "code": "database_error"}, status=503)
    return None
