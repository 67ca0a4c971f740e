# The image the Helm chart runs: the adapter's console script as an unprivileged user on a
# read-only root filesystem (the chart mounts an emptyDir for --cert-dir).
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
