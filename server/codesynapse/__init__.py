"""CodeSynapse: a live, metadata-only code graph served over LSP with budgeted answers."""

import os as _os

__version__ = "0.1.0"

# The indexer forks extraction workers, and milvus-lite's gRPC may be running threads in this
# process by then. gRPC's fork handlers restart its poller in the child, which runs no gRPC
# and may abort when the poller's descriptor is closed under it. Off unless the user says so.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
