"""What the projection commands (rebuild_projections, reconcile_projections, reembed) share."""
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqdm import tqdm

ENQUEUE_HELP = ("Queue the run for the process that owns the vector index (on a single node with the embedded "
                "shard, the web process consuming CELERY_VECTOR_QUEUE) instead of running it here.")


@contextmanager
def progress_bar(command, verbosity: int) -> Iterator[Callable[[int, int], None]]:
    """A bar on the command's stderr (hidden at -v 0) and the progress(done, total) callback that moves it."""
    with tqdm(total=0, unit="mem", file=command.stderr, disable=verbosity == 0) as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield progress
