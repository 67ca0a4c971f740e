"""The corpus of 30 real prometheus-adapter rule files (../shared/real-configs, verdicts in
INDEX.md): valid ones load and check-config summarises them; invalid ones fail naming the file,
the rule and the problem INDEX.md names; runtime-problem ones get a check-config warning."""

from __future__ import annotations


import pytest

from adapter import check_config
from adapter.config import ConfigError, load_config
from adapter.rules import compile_config
from adapter.rules.lint import Severity, lint_config
from tests import paths

CORPUS = paths.REAL_CONFIGS

VALID = [
    "01-kube-prometheus-resource-rules.yaml", "02-helm-chart-default-rules.yaml",
    "03-adapter-deploy-manifests-resource-rules.yaml", "05-adapter-docs-config-walkthrough.yaml",
    "06-adapter-docs-walkthrough-configmap.yaml", "07-adapter-docs-externalmetrics-namespaced-false.yaml",
    "10-deckhouse-rendered-ingress-namespaced-false-recording-rules.yaml",
    "11-sighup-fury-nginx-template-plus-overrides.yaml", "13-metrics-on-kind-rules-and-external-filters.yaml",
    "14-autoscaleworkshop-legacy-cadvisor-labels-resource-rules.yaml",
    "15-openshift-istio-service-histogram-quantile.yaml", "16-istio-deployment-terraform-helm-values.yaml",
    "17-kube-hpa-talk-ingress-exported-namespace.yaml", "18-homelab-external-dollar0-and-resource-rules.yaml",
    "20-espa-flink-kafka-lag-subquery.yaml", "21-weblogic-external-escaped-doublequotes.yaml",
    "23-rabbitmq-queue-on-service-no-name.yaml", "24-node-resource-adapter-instance-to-node.yaml",
    "27-minecraft-hardcoded-query-group-right.yaml", "29-msc-onlab-deployment-ratio-absent-vector.yaml",
    "30-promitor-unquoted-seriesQuery.yaml",
]

# file -> (rule location, field, fragments of the problem INDEX.md names)
INVALID = {
    "04-adapter-docs-sample-config-INVALID-YAML.yaml": (
        "rules[0]", "metricsQuery", ["(line 30)", "invalid YAML", 'unescaped "', "#697"]),
    "09-codefresh-onprem-capital-Rules-labelvaluesbyname.yaml": (
        "", "Rules", ["field Rules not found in type config.MetricsDiscoveryConfig", "did you mean 'rules'"]),
    "19-kubecon2018-demo-obsolete-dollar-delimiters.yaml": (
        "rules[0]", "resources.template", ["must include at least `{{.Resource}}` in the label template"]),
    "25-eks-gpu-dcgm-metricsQuery-under-name-INVALID.yaml": (
        "rules[1]", "name.metricsQuery", ["unknown field 'metricsQuery'", "field metricsQuery not found in type config.NameMapping"]),
}

# file -> (rule location, fragment of the runtime problem INDEX.md names)
RUNTIME = {
    "08-rexagod-deprecation-doc-exhaustive-go-template.yaml": ("rules[0]", "contains `{{ ... }}`"),
    "12-tiamat-sqs-external-matches-null.yaml": (
        "externalRules[0]", "no generic resource label form specified for this metric"),
    "22-sunbird-kafka-lag-external-ansible-jinja-hyphen-names.yaml": ("externalRules[0]", "contains `{{ ... }}`"),
    "26-gpu-hpa-no-name-no-metricsQuery.yaml": ("rules[0]", "empty query produced by metrics query template"),
    "28-emqx-chart-5.2.0-rendered-no-labelmatchers.yaml": (
        "rules[2]", "no generic resource label form specified for this metric"),
}


def test_the_corpus_is_fully_classified() -> None:
    files = sorted(p.name for p in CORPUS.glob("*.yaml"))
    assert len(files) == 30
    assert sorted([*VALID, *INVALID, *RUNTIME]) == files


@pytest.mark.parametrize("name", [pytest.param(n, id=n[:2]) for n in VALID])
def test_valid_configs_load_without_warnings_and_are_summarised(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    compiled = compile_config(load_config(CORPUS / name))
    assert [f for f in lint_config(compiled) if f.severity is Severity.WARNING] == []
    assert check_config.main([str(CORPUS / name)]) == 0
    out = capsys.readouterr().out
    for rule in (*compiled.custom, *compiled.external):
        assert f"{rule.ref.location} ({rule.kind}) seriesQuery: {rule.series_query}" in out
    if compiled.resource is not None:
        assert "resourceRules (metrics.k8s.io" in out and "container example: " in out
    assert "FAILS" not in out  # every example query renders
    assert out.rstrip().endswith("loads; 0 warning(s)")


@pytest.mark.parametrize("name", [pytest.param(n, id=n[:2]) for n in INVALID])
def test_invalid_configs_fail_naming_file_rule_and_problem(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    location, field, fragments = INVALID[name]
    path = CORPUS / name
    with pytest.raises(ConfigError) as err:
        compile_config(load_config(path))
    problem = err.value.problems[0]
    assert (problem.source, problem.location, problem.field) == (str(path), location, field)
    for fragment in fragments:
        assert fragment in str(problem)
    assert check_config.main([str(path)]) == 1
    captured = capsys.readouterr()
    assert str(path) in captured.err and all(f in captured.err for f in fragments)
    assert captured.out == ""


@pytest.mark.parametrize("name", [pytest.param(n, id=n[:2]) for n in RUNTIME])
def test_runtime_problem_configs_load_with_a_warning(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    location, fragment = RUNTIME[name]
    assert check_config.main([str(CORPUS / name)]) == 0
    out = capsys.readouterr().out
    block = out.split(f"\n{location} (", 1)[1].split("\n\n", 1)[0]
    assert "warning:" in block and fragment in block
    assert "loads; 0 warning(s)" not in out
