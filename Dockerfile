# The image the Helm chart runs for both components, as an unprivileged user on a read-only root
# filesystem: the entrypoint is the adapter (the chart mounts an emptyDir for --cert-dir); the
# controller's Deployment sets `command: [prom-autoscaler-controller, run]`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY adapter adapter
COPY controller controller
COPY kubecommon kubecommon
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin adapter
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 10001
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["prom-autoscaler-adapter"]
