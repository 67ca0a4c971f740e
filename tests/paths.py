"""Where the tests find the repository and the shared specification beside it.

CI clones the repository with `../shared` beside it, so nothing may assume an absolute path.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
VECTORS = SHARED / "spec" / "vectors"
REAL_CONFIGS = SHARED / "real-configs"
