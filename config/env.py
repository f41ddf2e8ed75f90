"""The environment every settings module reads (django-environ), with a `.env` file in the project
root read into it first when there is one."""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env") if (BASE_DIR / ".env").exists() else None
