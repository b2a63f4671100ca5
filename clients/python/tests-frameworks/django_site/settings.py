"""A Django project's settings with the cache line docs/frameworks.md shows
(RLOCK_TEST_REDIS_URL: the test's redis-server with the module)."""

import os

SECRET_KEY = "rlock-tests"
INSTALLED_APPS = []
DATABASES = {}
USE_TZ = True

CACHES = {
    "default": {
        "BACKEND": "rlock.contrib.django.RedisCache",
        "LOCATION": os.environ["RLOCK_TEST_REDIS_URL"],
    }
}
