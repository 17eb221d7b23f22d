# The LabQueue image. One image runs every part of the portal through deploy/entrypoint:
#   docker run IMAGE migrate        # apply migrations, then exit (before the others start)
#   docker run IMAGE web            # gunicorn on LABQUEUE_WEB_BIND (0.0.0.0:8000), deploy/gunicorn.conf.py
#   docker run IMAGE worker         # the Celery worker: a Slurm submit host (see below)
#   docker run IMAGE beat           # Celery beat: exactly one at a site
#   docker run IMAGE doctor         # check the installation, naming the fix for anything wrong
# deploy/compose.yaml runs them together; README "Operators: install" explains each mount.
#
# The Slurm client and munge must match the site's Slurm (a client may be older than slurmctld by at
# most two releases, never newer). Pick them at build time:
#   - Debian's packages (the default): DEBIAN_RELEASE=bookworm gives Slurm 22.05, trixie gives 24.11:
#       docker build --build-arg DEBIAN_RELEASE=trixie -t labqueue .
#   - the site's own Slurm build: a base image with Python 3.11+ (pip), the site's Slurm client
#     commands and libmunge already installed, and no packages added here:
#       docker build --build-arg BASE_IMAGE=registry.example.edu/hpc/slurm-client:23.11 \
#                    --build-arg SLURM_PACKAGES= -t labqueue .
#     deploy/sudoers.labqueue names /usr/bin/sbatch and /usr/bin/scancel: where the site's commands live
#     elsewhere, change those paths in it before building.
# At run time the Slurm tools need the site's /etc/slurm (read-only) and munged's socket directory
# /run/munge from the host (the key in /etc/munge stays on the host: clients only talk to the socket).
# The uid of labqueue here must be the host's (LABQUEUE_UID, LABQUEUE_GID): munge and the job root's group
# judge numeric ids.
ARG DEBIAN_RELEASE=bookworm
ARG BASE_IMAGE=python:3.11-slim-${DEBIAN_RELEASE}
FROM ${BASE_IMAGE}

ARG SLURM_PACKAGES="slurm-client munge"
ARG LABQUEUE_UID=990
ARG LABQUEUE_GID=990

# sudo: the worker runs sbatch, scancel and the job-directory helper as the student (deploy/sudoers.labqueue).
RUN apt-get update \
 && apt-get install -y --no-install-recommends sudo ${SLURM_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*

# The service account. It owns nothing in /app: the code cannot be changed by the process running it. Its home
# stays open to traverse (0755): the default job root /var/lib/labqueue/jobs is reached by the students too.
RUN groupadd --system --gid "${LABQUEUE_GID}" labqueue \
 && useradd --system --uid "${LABQUEUE_UID}" --gid labqueue --home-dir /var/lib/labqueue \
      --shell /usr/sbin/nologin labqueue \
 && install -d -o labqueue -g labqueue -m 0755 /var/lib/labqueue \
 && install -d -o labqueue -g labqueue -m 0750 /var/lib/labqueue/media /var/lib/labqueue/beat

WORKDIR /app
# Only what the portal needs to run: requirements.txt (never requirements-dev.txt: no pytest, ruff or IdPs).
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .

# The privilege model of README "Privilege model", as on a submit host: the root-owned helper and the
# sudoers rule that lets labqueue run exactly sbatch, scancel and the helper as a member of %students.
RUN install -d -o root -g root -m 0755 /usr/local/libexec \
 && install -o root -g root -m 0755 scripts/labqueue-jobdir /usr/local/libexec/labqueue-jobdir \
 && install -o root -g root -m 0440 deploy/sudoers.labqueue /etc/sudoers.d/labqueue \
 && visudo -cf /etc/sudoers.d/labqueue

# Static files: collected at build time to where the settings read LABQUEUE_STATIC_ROOT, compressed and with
# content-hashed names (LABQUEUE_STATIC_MANIFEST=1: whitenoise's CompressedManifestStaticFilesStorage).
ENV LABQUEUE_STATIC_ROOT=/var/lib/labqueue/static \
    LABQUEUE_STATIC_MANIFEST=1 \
    LABQUEUE_MEDIA_ROOT=/var/lib/labqueue/media \
    LABQUEUE_BEAT_SCHEDULE=/var/lib/labqueue/beat/celerybeat-schedule \
    LABQUEUE_WEB_BIND=0.0.0.0:8000 \
    PYTHONUNBUFFERED=1
RUN LABQUEUE_SECRET_KEY=build-only-not-a-secret python manage.py collectstatic --noinput

USER labqueue
EXPOSE 8000
ENTRYPOINT ["/app/deploy/entrypoint"]
CMD ["web"]
