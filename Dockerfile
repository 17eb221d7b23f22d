# The LabQueue image. One image runs every part of the portal through deploy/entrypoint:
#   docker run IMAGE migrate        # apply migrations, then exit (before the others start)
#   docker run IMAGE web            # gunicorn on LABQUEUE_WEB_BIND (0.0.0.0:8000), deploy/gunicorn.conf.py
#   docker run IMAGE worker         # the Celery worker: a Slurm submit host (see below)
#   docker run IMAGE beat           # Celery beat: exactly one at a site
#   docker run IMAGE doctor         # check the installation, naming the fix for anything wrong
# deploy/compose.yaml runs them together; README "Operators: install" explains each mount.
#
# Two stages: `packages` installs requirements.txt with pip apart, and the image itself copies the installed
# packages and only what production runs (.dockerignore is an allow-list: no tests, no lab scripts, no
# benchmarks or demo). HEALTHCHECK asks the web server for /healthz (deploy/probe.py).
#
# The base image is pinned by digest (BASE_DIGEST), so a rebuild gets the same Python and Debian until the
# digest is changed on purpose. To move to a newer one (security updates), on a machine that reaches Docker Hub:
#   docker buildx imagetools inspect python:3.11-slim-bookworm      # "Digest: sha256:..." (the index, all platforms)
# and put that digest in BASE_DIGEST below (or pass --build-arg BASE_DIGEST=sha256:...). With
# DEBIAN_RELEASE=trixie give the digest of python:3.11-slim-trixie the same way; with BASE_IMAGE (below), the
# digest is part of the name you give.
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
ARG BASE_DIGEST=sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG BASE_IMAGE=python:3.11-slim-${DEBIAN_RELEASE}@${BASE_DIGEST}

# --- packages: requirements.txt (never requirements-dev.txt: no pytest, ruff or IdPs), installed into a
# directory of their own that the image copies; pip's work stays in this stage.
FROM ${BASE_IMAGE} AS packages
WORKDIR /build
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install --no-cache-dir --target=/opt/labqueue/packages -r requirements.txt \
    && pip install --no-cache-dir --no-deps --target=/opt/labqueue/packages -r requirements-nodeps.txt

# --- the image
FROM ${BASE_IMAGE}

ARG SLURM_PACKAGES="slurm-client munge"
ARG LABQUEUE_UID=990
ARG LABQUEUE_GID=990

# sudo: the worker runs sbatch, scancel and the job-directory helper as the student (deploy/sudoers.labqueue).
# The helper starts with /usr/bin/python3: where the base image's Python lives elsewhere, that name points to it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends sudo ${SLURM_PACKAGES} \
 && rm -rf /var/lib/apt/lists/* \
 && { [ -e /usr/bin/python3 ] || ln -s "$(command -v python3)" /usr/bin/python3; }

# The service account. It owns nothing in /app: the code cannot be changed by the process running it. Its home
# stays open to traverse (0755): the default job root /var/lib/labqueue/jobs is reached by the students too.
RUN groupadd --system --gid "${LABQUEUE_GID}" labqueue \
 && useradd --system --uid "${LABQUEUE_UID}" --gid labqueue --home-dir /var/lib/labqueue \
      --shell /usr/sbin/nologin labqueue \
 && install -d -o labqueue -g labqueue -m 0755 /var/lib/labqueue \
 && install -d -o labqueue -g labqueue -m 0750 /var/lib/labqueue/media /var/lib/labqueue/beat

# The Python packages from the first stage (PYTHONPATH: the image's python3 finds them; the entrypoint runs
# gunicorn and Celery as its modules).
COPY --from=packages /opt/labqueue/packages /opt/labqueue/packages
ENV PYTHONPATH=/opt/labqueue/packages \
    PATH=/opt/labqueue/packages/bin:$PATH

WORKDIR /app
# The build context is only what production runs (.dockerignore).
COPY . .

# The privilege model of README "Privilege model", as on a submit host: the root-owned helper and the
# sudoers rule that lets labqueue run exactly sbatch, scancel and the helper as a member of %students.
RUN install -d -o root -g root -m 0755 /usr/local/libexec \
 && install -o root -g root -m 0755 scripts/labqueue-jobdir /usr/local/libexec/labqueue-jobdir \
 && install -o root -g root -m 0644 scripts/labqueue_jobdir.py /usr/local/libexec/labqueue_jobdir.py \
 && /usr/bin/python3 -m py_compile /usr/local/libexec/labqueue_jobdir.py \
 && install -o root -g root -m 0440 deploy/sudoers.labqueue /etc/sudoers.d/labqueue \
 && visudo -cf /etc/sudoers.d/labqueue

# Static files: collected at build time to where the settings read LABQUEUE_STATIC_ROOT, compressed and with
# content-hashed names (LABQUEUE_STATIC_MANIFEST=1: whitenoise's CompressedManifestStaticFilesStorage). The code
# is compiled here too: the service account cannot write __pycache__ into /app.
ENV LABQUEUE_STATIC_ROOT=/var/lib/labqueue/static \
    LABQUEUE_STATIC_MANIFEST=1 \
    LABQUEUE_MEDIA_ROOT=/var/lib/labqueue/media \
    LABQUEUE_BEAT_SCHEDULE=/var/lib/labqueue/beat/celerybeat-schedule \
    LABQUEUE_WEB_BIND=0.0.0.0:8000 \
    PYTHONUNBUFFERED=1
RUN LABQUEUE_SECRET_KEY=build-only-not-a-secret python3 manage.py collectstatic --noinput \
 && python3 -m compileall -q /app

USER labqueue
EXPOSE 8000
# The web server answers /healthz (deploy/probe.py, LABQUEUE_WEB_BIND). A container started as the worker or
# beat serves no web page: compose gives those a health check of their own (/readyz through the web service).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["/app/deploy/entrypoint", "probe", "/healthz"]
ENTRYPOINT ["/app/deploy/entrypoint"]
CMD ["web"]
