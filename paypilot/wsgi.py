"""The WSGI entry point: the Django application, with start-up objects frozen out of the GC."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
application = get_wsgi_application()
# Move everything loaded at start-up (Django, the apps, their modules) out of the cyclic
# garbage collector's view: a full collection then walks only what requests create, instead
# of pausing every in-flight request while it walks the whole framework.
gc.freeze()
