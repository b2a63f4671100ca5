"""rlock for the frameworks Python teams lock through: Celery (rlock.contrib.celery, and backends
for celery-once and celery-singleton), Django (rlock.contrib.django). Each needs its framework
installed: ``pip install rlock[celery]`` or ``rlock[django]``. docs/frameworks.md has the
one-line switch of each."""
