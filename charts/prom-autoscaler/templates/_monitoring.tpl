{{/*
Shared by the ServiceMonitor, the PrometheusRule and the `helm test` Pod.
*/}}

{{/*
The metrics API group-versions the adapter's APIServices register, one "<version>.<group>" per
line (the APIService names): the same switches apiservice.yaml reads.
*/}}
{{- define "prom-autoscaler.servedAPIServices" -}}
{{- $api := .Values.apiService -}}
{{- $names := list -}}
{{- if .Values.adapter.enabled -}}
{{- if $api.customMetrics.v1beta1.enabled }}{{ $names = append $names "v1beta1.custom.metrics.k8s.io" }}{{ end -}}
{{- if $api.customMetrics.v1beta2.enabled }}{{ $names = append $names "v1beta2.custom.metrics.k8s.io" }}{{ end -}}
{{- if $api.externalMetrics.enabled }}{{ $names = append $names "v1beta1.external.metrics.k8s.io" }}{{ end -}}
{{- if $api.resourceMetrics.enabled }}{{ $names = append $names "v1beta1.metrics.k8s.io" }}{{ end -}}
{{- end -}}
{{- join "\n" $names -}}
{{- end -}}

{{/* Labels of a monitoring object: the chart's labels plus the ones Prometheus selects on. */}}
{{- define "prom-autoscaler.monitoringLabels" -}}
{{- $root := index . 0 -}}
{{- $extra := index . 1 -}}
helm.sh/chart: {{ include "prom-autoscaler.chart" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: prom-autoscaler
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- with (merge (dict) ($extra | default dict) ($root.Values.customLabels | default dict)) }}
{{ toYaml . }}
{{- end }}
{{- end -}}
