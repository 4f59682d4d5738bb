"""A module that starts a thread when it is imported, which no fork handler stops: a template
that imports it cannot fork safely."""

import threading
import time

_THREAD = threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="kiln-test-sleeper")
_THREAD.start()
