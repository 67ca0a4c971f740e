{{/*
Names, labels and the command line of the controller (prom-autoscaler-controller). Its pods get
their own app.kubernetes.io/name ("<name>-controller"), so the adapter's Service, PDB and spread
constraints, which select on name + instance, never pick them up.
*/}}

{{/* "<fullname>-controller", within the 63-character name limit. */}}
{{- define "prom-autoscaler.controller.fullname" -}}
{{- printf "%s-controller" (include "prom-autoscaler.fullname" . | trunc 52 | trimSuffix "-") -}}
{{- end -}}

{{- define "prom-autoscaler.controller.name" -}}
{{- printf "%s-controller" (include "prom-autoscaler.name" . | trunc 52 | trimSuffix "-") -}}
{{- end -}}

{{/* Labels that select the controller's pods; never change them after the first install. */}}
{{- define "prom-autoscaler.controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "prom-autoscaler.controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "prom-autoscaler.controller.labels" -}}
helm.sh/chart: {{ include "prom-autoscaler.chart" . }}
{{ include "prom-autoscaler.controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: prom-autoscaler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.customLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "prom-autoscaler.controller.serviceAccountName" -}}
{{- $sa := .Values.controller.serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "prom-autoscaler.controller.fullname" .) $sa.name -}}
{{- else -}}
{{- required "controller.serviceAccount.name is required when controller.serviceAccount.create=false (the controller needs an identity with the RBAC this chart binds)" $sa.name -}}
{{- end -}}
{{- end -}}

{{/* The Lease the replicas elect a leader with (in the release namespace). */}}
{{- define "prom-autoscaler.controller.leaseName" -}}
{{- .Values.controller.leaderElection.resourceName | default (include "prom-autoscaler.controller.fullname" .) -}}
{{- end -}}

{{/*
The controller's command line, one flag per line, built from values. Flag names are the
controller's (`python -m controller --help`), which follow kube-controller-manager's.
*/}}
{{- define "prom-autoscaler.controller.args" -}}
{{- $c := .Values.controller -}}
{{- $le := $c.leaderElection -}}
{{- $a := list (printf "--concurrent-syncs=%v" $c.concurrentSyncs) (printf "--sync-period=%s" $c.syncPeriod) -}}
{{- $a = append $a (printf "--horizontal-pod-autoscaler-tolerance=%v" $c.tolerance) -}}
{{- $a = append $a (printf "--horizontal-pod-autoscaler-downscale-stabilization=%s" $c.downscaleStabilization) -}}
{{- $a = append $a (printf "--horizontal-pod-autoscaler-cpu-initialization-period=%s" $c.cpuInitializationPeriod) -}}
{{- $a = append $a (printf "--horizontal-pod-autoscaler-initial-readiness-delay=%s" $c.initialReadinessDelay) -}}
{{- $a = append $a (printf "--leader-elect=%t" $le.enabled) -}}
{{- if $le.enabled -}}
{{- $a = append $a (printf "--leader-elect-lease-duration=%s" $le.leaseDuration) -}}
{{- $a = append $a (printf "--leader-elect-renew-deadline=%s" $le.renewDeadline) -}}
{{- $a = append $a (printf "--leader-elect-retry-period=%s" $le.retryPeriod) -}}
{{- $a = append $a (printf "--leader-elect-resource-name=%s" (include "prom-autoscaler.controller.leaseName" .)) -}}
{{- $a = append $a (printf "--leader-elect-resource-namespace=%s" (include "prom-autoscaler.namespace" .)) -}}
{{- end -}}
{{- if $c.previewNativeHpas -}}
{{- $a = append $a "--preview-native-hpas" -}}
{{- end -}}
{{- with $c.watchNamespace }}{{ $a = append $a (printf "--watch-namespace=%s" .) }}{{ end -}}
{{- $a = append $a (printf "--status-checkpoint-interval=%s" $c.statusCheckpointInterval) -}}
{{- $a = append $a (printf "--cache-sync-timeout=%s" $c.cacheSyncTimeout) -}}
{{- $a = append $a (printf "--metrics-port=%v" $c.metricsPort) -}}
{{- $a = append $a (printf "--metrics-secure=%t" $c.metricsSecure) -}}
{{- if and $c.metricsSecure $c.tls.existingSecret -}}
{{- $dir := include "prom-autoscaler.controller.tlsDir" . -}}
{{- $a = concat $a (list (printf "--tls-cert-file=%s/tls.crt" $dir) (printf "--tls-private-key-file=%s/tls.key" $dir)) -}}
{{- end -}}
{{- if include "prom-autoscaler.controller.readsHistory" . -}}
{{- $a = append $a (printf "--prometheus-url=%s" (include "prom-autoscaler.prometheusURL" .)) -}}
{{- $a = append $a (printf "--rules=%s/config.yaml" (include "prom-autoscaler.controller.rulesDir" .)) -}}
{{- $a = concat $a (include "prom-autoscaler.prometheusAccessArgs" . | fromYamlArray) -}}
{{- $a = append $a (printf "--history-step=%s" $c.history.step) -}}
{{- $a = append $a (printf "--history-max-lookback=%s" $c.history.maxLookback) -}}
{{- $a = append $a (printf "--history-refresh=%s" $c.history.refresh) -}}
{{- end -}}
{{- $a = append $a (printf "--v=%v" $c.logLevel) -}}
{{- $a = concat $a ($c.extraArguments | default list) -}}
{{- toYaml $a -}}
{{- end -}}

{{/*
"true" when the controller reads metric history for spec.prediction: controller.history.enabled
and a rule file to read (the adapter's ConfigMap, or rules.existing). Empty otherwise: objects with
spec.prediction then stay reactive and their status says why.
*/}}
{{- define "prom-autoscaler.controller.readsHistory" -}}
{{- if and .Values.controller.history.enabled (or .Values.adapter.enabled .Values.rules.existing) -}}true{{- end -}}
{{- end -}}

{{/* Where the adapter's rule file (its ConfigMap) is mounted in the controller (read only). */}}
{{- define "prom-autoscaler.controller.rulesDir" -}}/etc/prom-autoscaler/rules{{- end -}}

{{/* Where controller.tls.existingSecret is mounted (read only). */}}
{{- define "prom-autoscaler.controller.tlsDir" -}}/var/run/tls{{- end -}}

{{/*
A probe of the metrics port, from (list probe metricsSecure): with metricsSecure an httpGet probe
without a scheme gets HTTPS (the kubelet does not verify the certificate); a scheme given is kept.
*/}}
{{- define "prom-autoscaler.controller.probe" -}}
{{- $probe := deepCopy (index . 0) -}}
{{- if and (index . 1) (kindIs "map" $probe.httpGet) -}}
{{- if not $probe.httpGet.scheme }}{{ $_ := set $probe.httpGet "scheme" "HTTPS" }}{{ end -}}
{{- end -}}
{{- toYaml $probe -}}
{{- end -}}

{{/* Values combinations that render but cannot work; each failure says what to change. */}}
{{- define "prom-autoscaler.controller.validate" -}}
{{- $c := .Values.controller -}}
{{- if and $c.tls.existingSecret (not $c.metricsSecure) -}}
{{- fail (printf "controller.tls.existingSecret (%s) is set with controller.metricsSecure=false: the metrics port serves plain HTTP and would not use the certificate; drop one of them" $c.tls.existingSecret) -}}
{{- end -}}
{{- $le := $c.leaderElection -}}
{{- if $le.enabled -}}
{{- $lease := include "prom-autoscaler.seconds" $le.leaseDuration | float64 -}}
{{- $renew := include "prom-autoscaler.seconds" $le.renewDeadline | float64 -}}
{{- $retry := include "prom-autoscaler.seconds" $le.retryPeriod | float64 -}}
{{- if not (and (gt $lease $renew) (gt $renew (mulf 1.2 $retry))) -}}
{{- fail (printf "controller.leaderElection: leaseDuration (%s) must exceed renewDeadline (%s), which must exceed 1.2 × retryPeriod (%s), as client-go requires" $le.leaseDuration $le.renewDeadline $le.retryPeriod) -}}
{{- end -}}
{{- else if gt (int $c.replicas) 1 -}}
{{- fail (printf "controller.replicas=%v with controller.leaderElection.enabled=false: replicas would scale the same targets concurrently; enable leader election or run one replica" $c.replicas) -}}
{{- end -}}
{{- if not (concat ($c.rbac.scaleTargets | default list) ($c.rbac.extraScaleTargets | default list)) -}}
{{- fail "controller.rbac.scaleTargets and extraScaleTargets are both empty: the controller could scale nothing" -}}
{{- end -}}
{{- end -}}
