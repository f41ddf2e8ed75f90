"""Context assembly (DESIGN §7), one module per step: the request and what the caller brings, priced
(`request`), the candidate lines of each section (`sections`), the evidence passages (`evidence`), who
gets room (`budget`, `placement`), rendering (`render`), and the assembly that runs them (`assemble`)."""
from memory.context.assemble import assemble_context  # noqa: F401
from memory.context.evidence import Evidence  # noqa: F401
from memory.context.request import ContextBudgetError, ContextRequest, ContextResult  # noqa: F401
