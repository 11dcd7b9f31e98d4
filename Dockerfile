# syntax=docker/dockerfile:1
# llm-locust container image: `docker build -t llm-locust:0.1.0 .` (the tag is the version in
# pyproject.toml; the k8s manifests use that name). Two stages: the build stage turns the
# source into wheels (llm-locust's and every dependency's); the final stage installs those
# wheels alone into a venv, with no compiler, no setuptools and no source tree. Both stages run
# .ci/image-install, the script tests/integration/test_package.py runs on the same files.
ARG PYTHON_IMAGE=python:3.12.10-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY llm_locust ./llm_locust
COPY .ci/image-install /usr/local/bin/image-install
RUN image-install wheels /src /wheels

FROM ${PYTHON_IMAGE}
# Numeric user and group, so Kubernetes can check runAsNonRoot; the manifests use the same ids.
ARG UID=10001
RUN groupadd --gid "${UID}" llm-locust \
    && useradd --uid "${UID}" --gid "${UID}" --create-home --shell /usr/sbin/nologin llm-locust \
    && install -d -o "${UID}" -g "${UID}" /results
# The wheels come in through a bind mount, so no layer keeps them.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    --mount=type=bind,from=build,source=/usr/local/bin/image-install,target=/usr/local/bin/image-install \
    image-install install /wheels /opt/llm-locust
ENV PATH=/opt/llm-locust/bin:${PATH} \
    LOCUST_LOCUSTFILE=/opt/llm-locust/locustfile.py \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER ${UID}:${UID}
WORKDIR /home/llm-locust
EXPOSE 8089 5557 9646
CMD ["llm-locust", "--help"]
