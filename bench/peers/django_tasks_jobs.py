"""The no-op task of the django-tasks-db peer (imported by its db_worker by path)."""

from django_tasks import task


@task()
def noop(n: int) -> None:
    return None
