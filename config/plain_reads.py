# TEMPORARY re-export for the parallel read-path branch; the coordinator removes it at merge
from common.plain_reads import plain_instances, plain_rows  # noqa: F401
