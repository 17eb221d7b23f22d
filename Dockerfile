# The LabQueue web and worker image. The same image runs the web server
# (default command), the Celery worker and Celery beat:
#   docker run IMAGE                                         # web (gunicorn on :8000)
#   docker run IMAGE celery -A portal worker --loglevel=INFO # worker (needs Slurm clients + munge)
#   docker run IMAGE celery -A portal beat --loglevel=INFO
# The worker submits jobs with sbatch as the student: it needs the site's Slurm client
# configuration and munge key mounted (/etc/slurm, /etc/munge), the job file system mounted
# at LABQUEUE_JOB_ROOT, and a sudoers rule limited to sbatch/scancel (see README).
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends slurm-client munge sudo \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN LABQUEUE_SECRET_KEY=build-only python manage.py collectstatic --noinput

ENV LABQUEUE_STATIC_ROOT=/app/var/static
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
