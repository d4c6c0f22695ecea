{{- define "ksrs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ksrs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "ksrs.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "ksrs.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ksrs.labels" -}}
app.kubernetes.io/name: {{ include "ksrs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ksrs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ksrs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ksrs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ksrs.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The port of a Go listen address (":8080" -> 8080). */}}
{{- define "ksrs.port" -}}
{{- splitList ":" . | last -}}
{{- end -}}

{{/* Container arguments: every flag, with its value. */}}
{{- define "ksrs.args" -}}
{{- $s := .Values.scheduler -}}
{{- $l := .Values.logging -}}
{{- if .Values.karmadaKubeconfig.secretName }}
- "--kubeconfig={{ .Values.karmadaKubeconfig.mountPath }}/{{ .Values.karmadaKubeconfig.key }}"
{{- end }}
{{- if $s.master }}
- "--master={{ $s.master }}"
{{- end }}
- "--leader-elect={{ $s.leaderElect }}"
- "--leader-elect-resource-name={{ $s.leaderElectResourceName }}"
- "--leader-elect-resource-namespace={{ $s.leaderElectResourceNamespace }}"
- "--leader-elect-lease-duration={{ $s.leaderElectLeaseDuration }}"
- "--leader-elect-renew-deadline={{ $s.leaderElectRenewDeadline }}"
- "--leader-elect-retry-period={{ $s.leaderElectRetryPeriod }}"
- "--kube-api-qps={{ $s.kubeApiQps }}"
- "--kube-api-burst={{ $s.kubeApiBurst }}"
- "--metrics-bind-address={{ $s.metricsBindAddress }}"
- "--health-probe-bind-address={{ $s.healthProbeBindAddress }}"
- "--enable-scheduler-estimator={{ $s.enableSchedulerEstimator }}"
- "--disable-scheduler-estimator-in-pull-mode={{ $s.disableSchedulerEstimatorInPullMode }}"
- "--scheduler-estimator-timeout={{ $s.schedulerEstimatorTimeout }}"
- "--scheduler-estimator-service-namespace={{ $s.schedulerEstimatorServiceNamespace }}"
- "--scheduler-estimator-service-prefix={{ $s.schedulerEstimatorServicePrefix }}"
- "--scheduler-estimator-port={{ $s.schedulerEstimatorPort }}"
{{- if $s.schedulerEstimatorCertFile }}
- "--scheduler-estimator-cert-file={{ $s.schedulerEstimatorCertFile }}"
{{- end }}
{{- if $s.schedulerEstimatorKeyFile }}
- "--scheduler-estimator-key-file={{ $s.schedulerEstimatorKeyFile }}"
{{- end }}
{{- if $s.schedulerEstimatorCaFile }}
- "--scheduler-estimator-ca-file={{ $s.schedulerEstimatorCaFile }}"
{{- end }}
- "--insecure-skip-estimator-verify={{ $s.insecureSkipEstimatorVerify }}"
- "--enable-empty-workload-propagation={{ $s.enableEmptyWorkloadPropagation }}"
- "--plugins={{ join "," $s.plugins }}"
- "--scheduler-name={{ $s.schedulerName }}"
- "--concurrent-binding-syncs={{ $s.concurrentBindingSyncs }}"
{{- if $s.featureGates }}
- "--feature-gates={{ range $i, $k := keys $s.featureGates | sortAlpha }}{{ if $i }},{{ end }}{{ $k }}={{ index $s.featureGates $k }}{{ end }}"
{{- end }}
- "--enable-pprof={{ $s.enablePprof }}"
- "--profiling-bind-address={{ $s.profilingBindAddress }}"
- "--rate-limiter-base-delay={{ $s.rateLimiterBaseDelay }}"
- "--rate-limiter-max-delay={{ $s.rateLimiterMaxDelay }}"
- "--rate-limiter-qps={{ $s.rateLimiterQps }}"
- "--rate-limiter-bucket-size={{ $s.rateLimiterBucketSize }}"
- "--logging-format={{ $l.format }}"
- "--v={{ $l.v }}"
{{- if $l.vmodule }}
- "--vmodule={{ $l.vmodule }}"
{{- end }}
- "--log-flush-frequency={{ $l.flushFrequency }}"
- "--log-text-split-stream={{ $l.textSplitStream }}"
- "--log-text-info-buffer-size={{ $l.textInfoBufferSize }}"
- "--log-json-split-stream={{ $l.jsonSplitStream }}"
- "--log-json-info-buffer-size={{ $l.jsonInfoBufferSize }}"
{{- if $l.logDir }}
- "--log_dir={{ $l.logDir }}"
{{- end }}
{{- if $l.logFile }}
- "--log_file={{ $l.logFile }}"
{{- end }}
- "--log_file_max_size={{ $l.logFileMaxSize }}"
- "--logtostderr={{ $l.logtostderr }}"
- "--alsologtostderr={{ $l.alsologtostderr }}"
- "--add_dir_header={{ $l.addDirHeader }}"
- "--skip_headers={{ $l.skipHeaders }}"
- "--one_output={{ $l.oneOutput }}"
- "--skip_log_headers={{ $l.skipLogHeaders }}"
- "--stderrthreshold={{ $l.stderrthreshold }}"
{{- if $l.logBacktraceAt }}
- "--log_backtrace_at={{ $l.logBacktraceAt }}"
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}
