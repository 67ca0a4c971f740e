{{/*
The adapter's command line, one flag per line, built from values. Flag names are the adapter's
(`python -m adapter --help`), which follow prometheus-adapter's.
*/}}
{{- define "prom-autoscaler.args" -}}
{{- $mode := include "prom-autoscaler.tlsMode" . -}}
{{- $p := .Values.prometheus -}}
{{- $a := list "--config=/etc/adapter/config.yaml" (printf "--secure-port=%v" .Values.listenPort) "--cert-dir=/var/run/serving-cert" -}}
{{- if ne $mode "insecure" -}}
{{- $a = concat $a (list "--tls-cert-file=/var/run/tls/tls.crt" "--tls-private-key-file=/var/run/tls/tls.key") -}}
{{- end -}}
{{- $a = append $a (printf "--tls-min-version=%s" .Values.tlsMinVersion) -}}
{{- $a = append $a (printf "--service-name=%s" (include "prom-autoscaler.fullname" .)) -}}
{{- $a = append $a (printf "--service-namespace=%s" (include "prom-autoscaler.namespace" .)) -}}
{{- $a = append $a (printf "--v=%v" .Values.logLevel) -}}
{{- $a = append $a (printf "--prometheus-url=%s" (include "prom-autoscaler.prometheusURL" .)) -}}
{{- with $p.verb }}{{ $a = append $a (printf "--prometheus-verb=%s" .) }}{{ end -}}
{{- $a = concat $a (include "prom-autoscaler.prometheusAccessArgs" . | fromYamlArray) -}}
{{- $a = append $a (printf "--metrics-relist-interval=%s" .Values.metricsRelistInterval) -}}
{{- with .Values.metricsMaxAge }}{{ $a = append $a (printf "--metrics-max-age=%s" .) }}{{ end -}}
{{- $a = concat $a (.Values.extraArguments | default list) -}}
{{- toYaml $a -}}
{{- end -}}

{{/*
How to reach Prometheus beyond its URL and verb: timeout, TLS, credentials and headers, as flags
(a YAML list). The adapter and the controller's history reader (controller.history) take the same
flags and mount the same files (`prom-autoscaler.prometheusVolumes` / `...VolumeMounts`).
*/}}
{{- define "prom-autoscaler.prometheusAccessArgs" -}}
{{- $auth := include "prom-autoscaler.promAuthDir" . -}}
{{- $p := .Values.prometheus -}}
{{- $a := list -}}
{{- with $p.timeout }}{{ $a = append $a (printf "--prometheus-timeout=%s" .) }}{{ end -}}
{{- if $p.insecureSkipTLSVerify }}{{ $a = append $a "--prometheus-insecure-skip-tls-verify" }}{{ end -}}
{{- if or $p.ca.existingSecret $p.ca.existingConfigMap -}}
{{- $a = append $a (printf "--prometheus-ca-file=%s/ca/%s" $auth $p.ca.key) -}}
{{- end -}}
{{- if $p.clientCert.existingSecret -}}
{{- $a = concat $a (list (printf "--prometheus-client-tls-cert-file=%s/client/tls.crt" $auth) (printf "--prometheus-client-tls-key-file=%s/client/tls.key" $auth)) -}}
{{- end -}}
{{- if $p.bearerToken.existingSecret -}}
{{- $a = append $a (printf "--prometheus-token-file=%s/token/%s" $auth $p.bearerToken.key) -}}
{{- else if $p.bearerToken.serviceAccountToken -}}
{{- $a = append $a "--prometheus-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token" -}}
{{- end -}}
{{- if $p.basicAuth.existingSecret -}}
{{- $user := required "prometheus.basicAuth.username is required with prometheus.basicAuth.existingSecret" $p.basicAuth.username -}}
{{- $a = concat $a (list (printf "--prometheus-basic-auth-username=%s" $user) (printf "--prometheus-basic-auth-password-file=%s/basic-auth/%s" $auth $p.basicAuth.passwordKey)) -}}
{{- end -}}
{{- range $name := keys ($p.headers | default dict) | sortAlpha -}}
{{- $a = append $a (printf "--prometheus-header=%s=%v" $name (index $p.headers $name)) -}}
{{- end -}}
{{- toYaml $a -}}
{{- end -}}

{{/* The volumes holding Prometheus' CA, client certificate, token and password (from prometheus.*). */}}
{{- define "prom-autoscaler.prometheusVolumes" -}}
{{- $p := .Values.prometheus -}}
{{- with $p.ca.existingSecret }}
- name: prometheus-ca
  secret:
    secretName: {{ . }}
{{- end }}
{{- with $p.ca.existingConfigMap }}
- name: prometheus-ca
  configMap:
    name: {{ . }}
{{- end }}
{{- with $p.clientCert.existingSecret }}
- name: prometheus-client-cert
  secret:
    secretName: {{ . }}
{{- end }}
{{- with $p.bearerToken.existingSecret }}
- name: prometheus-token
  secret:
    secretName: {{ . }}
{{- end }}
{{- with $p.basicAuth.existingSecret }}
- name: prometheus-basic-auth
  secret:
    secretName: {{ . }}
{{- end }}
{{- end -}}

{{/* Where the flags of `prom-autoscaler.prometheusAccessArgs` find those files (read only). */}}
{{- define "prom-autoscaler.prometheusVolumeMounts" -}}
{{- $auth := include "prom-autoscaler.promAuthDir" . -}}
{{- $p := .Values.prometheus -}}
{{- if or $p.ca.existingSecret $p.ca.existingConfigMap }}
- name: prometheus-ca
  mountPath: {{ $auth }}/ca
  readOnly: true
{{- end }}
{{- if $p.clientCert.existingSecret }}
- name: prometheus-client-cert
  mountPath: {{ $auth }}/client
  readOnly: true
{{- end }}
{{- if $p.bearerToken.existingSecret }}
- name: prometheus-token
  mountPath: {{ $auth }}/token
  readOnly: true
{{- end }}
{{- if $p.basicAuth.existingSecret }}
- name: prometheus-basic-auth
  mountPath: {{ $auth }}/basic-auth
  readOnly: true
{{- end }}
{{- end -}}

{{/* Values combinations that render but cannot work; each failure says what to change. */}}
{{- define "prom-autoscaler.validate" -}}
{{- $p := .Values.prometheus -}}
{{- if and $p.ca.existingSecret $p.ca.existingConfigMap -}}
{{- fail "prometheus.ca: set existingSecret or existingConfigMap, not both" -}}
{{- end -}}
{{- if and $p.bearerToken.existingSecret $p.bearerToken.serviceAccountToken -}}
{{- fail "prometheus.bearerToken: set existingSecret or serviceAccountToken=true, not both" -}}
{{- end -}}
{{- if and $p.basicAuth.existingSecret (or $p.bearerToken.existingSecret $p.bearerToken.serviceAccountToken) -}}
{{- fail "prometheus.basicAuth and prometheus.bearerToken exclude each other (one Authorization header)" -}}
{{- end -}}
{{- if and $p.insecureSkipTLSVerify (or $p.ca.existingSecret $p.ca.existingConfigMap) -}}
{{- fail "prometheus.insecureSkipTLSVerify=true disables the verification prometheus.ca configures: set one of them" -}}
{{- end -}}
{{- with .Values.metricsMaxAge -}}
{{- if lt (include "prom-autoscaler.seconds" . | float64) (include "prom-autoscaler.seconds" $.Values.metricsRelistInterval | float64) -}}
{{- fail (printf "metricsMaxAge (%s) must be empty or at least metricsRelistInterval (%s): series would drop out of discovery between relists" . $.Values.metricsRelistInterval) -}}
{{- end -}}
{{- end -}}
{{- range $name, $value := .Values.prometheus.headers -}}
{{- if not (regexMatch "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" $name) -}}
{{- fail (printf "prometheus.headers: %q is not a valid HTTP header name" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
