from django.urls import include, path

urlpatterns = [path("ops/jobs/", include("anole_jobs.urls"))]
