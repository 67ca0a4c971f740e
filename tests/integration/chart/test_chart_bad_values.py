"""Bad values fail before anything reaches the cluster, with a message naming the value.

Type and shape mistakes are caught by values.schema.json, so both `helm lint` and `helm template`
(hence `helm install`) fail. Combinations that only the templates can judge use `fail`/`required`:
`helm template`/`install` fail on them, while Helm 3.10's `helm lint` only logs them.
"""

from __future__ import annotations

import pytest

from tests.integration.chart.conftest import Helm

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

PEM_CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _fast(sets: list[str]) -> list[str]:
    """Cases not about TLS render without the chart's RSA key generation (seconds on a busy box)."""
    return sets if any(s.startswith("tls.") for s in sets) else ["tls.insecureSkipTLSVerify=true", *sets]

SCHEMA_CASES = [
    pytest.param(["prometheus.url="], [], "prometheus.url: String length must be greater than or equal to 1",
                 id="empty-prometheus-url"),
    pytest.param(["prometheus.url=null"], [], "prometheus: url is required", id="no-prometheus-url"),
    pytest.param(["prometheus.url=prometheus:9090"], [], "prometheus.url: Does not match pattern",
                 id="url-without-scheme"),
    pytest.param([], ["logLevel=debug"], "logLevel: Invalid type. Expected: integer, given: string",
                 id="log-level-not-a-number"),
    pytest.param([], ["metricsRelistInterval=often"], "metricsRelistInterval: Does not match pattern",
                 id="relist-interval-not-a-duration"),
    pytest.param(["replicas=two"], [], "replicas: Invalid type. Expected: integer", id="replicas-not-a-number"),
    pytest.param(["promethues.url=http://x"], [], "Additional property promethues is not allowed",
                 id="misspelt-top-level-key"),
    pytest.param(["rules.custom[0].seriesQuery=up", "rules.custom[0].metricQuery=max(up)"], [],
                 "rules.custom.0: Additional property metricQuery is not allowed", id="misspelt-rule-field"),
    pytest.param(["rules.custom[0].seriesQuery=up"], [], "rules.custom.0: metricsQuery is required",
                 id="rule-without-metrics-query"),
    pytest.param(["tls.enable=true"], [], "tls.ca: String length must be greater than or equal to 1",
                 id="own-tls-without-ca"),
    pytest.param(["apiService.resourceMetrics.enabled=true"], [], "rules.resource: cpu is required",
                 id="metrics-k8s-io-without-resource-rules"),
    pytest.param(["apiService.customMetrics.v1beta1.versionPriority=0"], [],
                 "versionPriority: Must be greater than or equal to 1", id="version-priority-zero"),
    pytest.param(["image.pullPolicy=Sometimes"], [], "image.pullPolicy: image.pullPolicy must be one of",
                 id="pull-policy"),
]

TEMPLATE_CASES = [
    pytest.param(["rules.default=false"], "the rule file would be empty", id="no-rules-at-all"),
    pytest.param(["tls.enable=true", f"tls.ca={PEM_CA}", "tls.insecureSkipTLSVerify=true"],
                 "tls.enable and tls.insecureSkipTLSVerify exclude each other", id="own-tls-and-insecure"),
    pytest.param(["tls.enable=true", f"tls.ca={PEM_CA}"], "tls.certificate is required with tls.enable=true",
                 id="own-tls-without-certificate"),
    pytest.param(["prometheus.url=http://prometheus:9090"], "already has a port or a path while prometheus.port is 9090",
                 id="port-twice"),
    pytest.param(["prometheus.bearerToken.existingSecret=t", "prometheus.bearerToken.serviceAccountToken=true"],
                 "prometheus.bearerToken: set existingSecret or serviceAccountToken=true, not both",
                 id="two-token-sources"),
    pytest.param(["prometheus.basicAuth.existingSecret=pw"], "prometheus.basicAuth.username is required",
                 id="basic-auth-without-user"),
    pytest.param(["prometheus.headers.Bad\\ Header=x"], "\"Bad Header\" is not a valid HTTP header name",
                 id="bad-header-name"),
    pytest.param(["metricsRelistInterval=1m30s", "metricsMaxAge=90000ms"], None, id="max-age-equal-is-fine"),
    pytest.param(["metricsRelistInterval=1m30s", "metricsMaxAge=1m"],
                 "metricsMaxAge (1m) must be empty or at least metricsRelistInterval (1m30s)",
                 id="max-age-below-relist"),
    pytest.param(["serviceAccount.create=false"], "serviceAccount.name is required when serviceAccount.create=false",
                 id="no-service-account"),
]


@pytest.mark.parametrize(("sets", "set_strings", "message"), SCHEMA_CASES)
def test_schema_rejects(helm: Helm, sets: list[str], set_strings: list[str], message: str) -> None:
    sets = _fast(sets)
    lint = helm.lint(sets=sets, set_strings=set_strings)
    assert lint.returncode != 0
    assert message in lint.output, lint.output
    template = helm.template(sets=sets, set_strings=set_strings)
    assert template.returncode != 0
    assert message in template.stderr, template.stderr


@pytest.mark.parametrize(("sets", "message"), TEMPLATE_CASES)
def test_template_rejects(helm: Helm, sets: list[str], message: str | None) -> None:
    result = helm.template(sets=_fast(sets))
    if message is None:  # the boundary case next to a rejected one
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode != 0
    assert message in result.stderr, result.stderr

