{{/*
The rule file (--config), prometheus-adapter format, built from values:
  rules:          the default rules (rules.default) followed by rules.custom
  externalRules:  rules.external
  resourceRules:  rules.resource
Values are copied as data (toYaml), never re-templated, so `<<.Series>>` and friends reach the
adapter exactly as written.
*/}}

{{/*
Default custom-metrics rules, the six rules prometheus-adapter's config generator
(`DefaultConfig(rate, "")`) and its Helm chart install:
  cAdvisor container_* series on pods:  *_seconds_total and *_total as rates, the rest as gauges;
  any other series with a namespace label: gauges, *_total and *_seconds_total as rates, mapped to
  resources by label name (a `pod` label means pods, `service` means services, ...).
The rate window is rules.defaultRateInterval.
*/}}
{{- define "prom-autoscaler.defaultRules" -}}
{{- $rate := .Values.rules.defaultRateInterval | default "5m" -}}
{{- $containers := `{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}` -}}
{{- $others := `{namespace!="",__name__!~"^container_.*"}` -}}
- seriesQuery: {{ $containers | quote }}
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name:
    matches: "^container_(.*)_seconds_total$"
  metricsQuery: {{ printf `sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[%s])) by (<<.GroupBy>>)` $rate | quote }}
- seriesQuery: {{ $containers | quote }}
  seriesFilters:
  - isNot: "^container_.*_seconds_total$"
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name:
    matches: "^container_(.*)_total$"
  metricsQuery: {{ printf `sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[%s])) by (<<.GroupBy>>)` $rate | quote }}
- seriesQuery: {{ $containers | quote }}
  seriesFilters:
  - isNot: "^container_.*_total$"
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name:
    matches: "^container_(.*)$"
  metricsQuery: {{ `sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)` | quote }}
- seriesQuery: {{ $others | quote }}
  seriesFilters:
  - isNot: ".*_total$"
  resources:
    template: "<<.Resource>>"
  metricsQuery: {{ `sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)` | quote }}
- seriesQuery: {{ $others | quote }}
  seriesFilters:
  - isNot: ".*_seconds_total"
  resources:
    template: "<<.Resource>>"
  name:
    matches: "^(.*)_total$"
  metricsQuery: {{ printf `sum(rate(<<.Series>>{<<.LabelMatchers>>}[%s])) by (<<.GroupBy>>)` $rate | quote }}
- seriesQuery: {{ $others | quote }}
  resources:
    template: "<<.Resource>>"
  name:
    matches: "^(.*)_seconds_total$"
  metricsQuery: {{ printf `sum(rate(<<.Series>>{<<.LabelMatchers>>}[%s])) by (<<.GroupBy>>)` $rate | quote }}
{{- end -}}

{{/* The whole rule file as YAML. */}}
{{- define "prom-autoscaler.ruleFile" -}}
{{- $rules := list -}}
{{- if .Values.rules.default -}}
{{- $rules = concat $rules (include "prom-autoscaler.defaultRules" . | fromYamlArray) -}}
{{- end -}}
{{- $rules = concat $rules (.Values.rules.custom | default list) -}}
{{- $file := dict -}}
{{- with $rules }}{{ $_ := set $file "rules" . }}{{ end -}}
{{- with .Values.rules.external }}{{ $_ := set $file "externalRules" . }}{{ end -}}
{{- with .Values.rules.resource }}{{ $_ := set $file "resourceRules" . }}{{ end -}}
{{- if not $file -}}
{{- fail "the rule file would be empty: keep rules.default=true, or give rules.custom, rules.external or rules.resource, or point rules.existing at a ConfigMap holding config.yaml" -}}
{{- end -}}
{{- toYaml $file -}}
{{- end -}}

{{/* True (non-empty) when the adapter will serve metrics.k8s.io from resourceRules we know of. */}}
{{- define "prom-autoscaler.hasResourceRules" -}}
{{- if or .Values.rules.existing .Values.rules.resource -}}true{{- end -}}
{{- end -}}
