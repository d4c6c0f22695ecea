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
- "--exit-on-lost-lease={{ $s.exitOnLostLease }}"
{{- if $s.schedulerEstimatorTlsServerName }}
- "--scheduler-estimator-tls-server-name={{ $s.schedulerEstimatorTlsServerName }}"
{{- end }}
- "--scheduler-estimator-tls-name-annotation={{ $s.schedulerEstimatorTlsNameAnnotation }}"
- "--scheduler-estimator-endpoint-routing={{ $s.schedulerEstimatorEndpointRouting }}"
- "--scheduler-estimator-failure-policy={{ $s.schedulerEstimatorFailurePolicy }}"
- "--enable-explain-endpoint={{ $s.enableExplainEndpoint }}"
{{- include "ksrs.loggingArgs" $l }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The logging and klog flags, from a dict with the keys of the logging values. */}}
{{- define "ksrs.loggingArgs" -}}
{{- $l := . }}
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
- "--alsologtostderrthreshold={{ $l.alsologtostderrthreshold }}"
- "--legacy-stderr-threshold-behavior={{ $l.legacyStderrThresholdBehavior }}"
- "--add_dir_header={{ $l.addDirHeader }}"
- "--skip_headers={{ $l.skipHeaders }}"
- "--one_output={{ $l.oneOutput }}"
- "--skip_log_headers={{ $l.skipLogHeaders }}"
- "--stderrthreshold={{ $l.stderrthreshold }}"
{{- if $l.logBacktraceAt }}
- "--log_backtrace_at={{ $l.logBacktraceAt }}"
{{- end }}
{{- end -}}

{{/*
karmada-descheduler (optional, descheduler.enabled). Its objects carry their own
app.kubernetes.io/name, so that no selector of the scheduler's objects matches them.
*/}}
{{- define "ksrs.descheduler.name" -}}
{{- printf "%s-descheduler" (include "ksrs.name" . | trunc 50 | trimSuffix "-") -}}
{{- end -}}

{{- define "ksrs.descheduler.fullname" -}}
{{- printf "%s-descheduler" (include "ksrs.fullname" . | trunc 50 | trimSuffix "-") -}}
{{- end -}}

{{- define "ksrs.descheduler.labels" -}}
app.kubernetes.io/name: {{ include "ksrs.descheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: descheduler
app.kubernetes.io/part-of: {{ include "ksrs.name" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ksrs.descheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ksrs.descheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ksrs.descheduler.serviceAccountName" -}}
{{- $sa := .Values.descheduler.serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "ksrs.descheduler.fullname" .) $sa.name -}}
{{- else -}}
{{- default "default" $sa.name -}}
{{- end -}}
{{- end -}}

{{/*
A copy of the chart-wide dict .base with the keys of .override set over it (a key set to
false, 0 or "" overrides too, unlike mergeOverwrite). Writes the result into .out.
*/}}
{{- define "ksrs.overlay" -}}
{{- range $k, $v := .base }}{{ $_ := set $.out $k $v }}{{ end -}}
{{- range $k, $v := .override }}{{ $_ := set $.out $k $v }}{{ end -}}
{{- end -}}

{{/* The descheduler's container arguments: every flag of karmada-descheduler, with its value. */}}
{{- define "ksrs.descheduler.args" -}}
{{- $d := .Values.descheduler -}}
{{- $kc := dict -}}
{{- include "ksrs.overlay" (dict "base" .Values.karmadaKubeconfig "override" $d.karmadaKubeconfig "out" $kc) -}}
{{- $l := dict -}}
{{- include "ksrs.overlay" (dict "base" .Values.logging "override" $d.logging "out" $l) -}}
{{- if $kc.secretName }}
- "--kubeconfig={{ $kc.mountPath }}/{{ $kc.key }}"
{{- end }}
{{- if $d.master }}
- "--master={{ $d.master }}"
{{- end }}
- "--leader-elect={{ $d.leaderElect }}"
- "--leader-elect-resource-namespace={{ $d.leaderElectResourceNamespace }}"
- "--leader-elect-lease-duration={{ $d.leaderElectLeaseDuration }}"
- "--leader-elect-renew-deadline={{ $d.leaderElectRenewDeadline }}"
- "--leader-elect-retry-period={{ $d.leaderElectRetryPeriod }}"
- "--exit-on-lost-lease={{ $d.exitOnLostLease }}"
- "--kube-api-qps={{ $d.kubeApiQps }}"
- "--kube-api-burst={{ $d.kubeApiBurst }}"
- "--metrics-bind-address={{ $d.metricsBindAddress }}"
- "--health-probe-bind-address={{ $d.healthProbeBindAddress }}"
- "--enable-pprof={{ $d.enablePprof }}"
- "--profiling-bind-address={{ $d.profilingBindAddress }}"
- "--scheduler-estimator-timeout={{ $d.schedulerEstimatorTimeout }}"
- "--scheduler-estimator-service-namespace={{ $d.schedulerEstimatorServiceNamespace }}"
- "--scheduler-estimator-service-prefix={{ $d.schedulerEstimatorServicePrefix }}"
- "--scheduler-estimator-port={{ $d.schedulerEstimatorPort }}"
{{- if $d.schedulerEstimatorCertFile }}
- "--scheduler-estimator-cert-file={{ $d.schedulerEstimatorCertFile }}"
{{- end }}
{{- if $d.schedulerEstimatorKeyFile }}
- "--scheduler-estimator-key-file={{ $d.schedulerEstimatorKeyFile }}"
{{- end }}
{{- if $d.schedulerEstimatorCaFile }}
- "--scheduler-estimator-ca-file={{ $d.schedulerEstimatorCaFile }}"
{{- end }}
- "--insecure-skip-estimator-verify={{ $d.insecureSkipEstimatorVerify }}"
{{- if $d.schedulerEstimatorTlsServerName }}
- "--scheduler-estimator-tls-server-name={{ $d.schedulerEstimatorTlsServerName }}"
{{- end }}
- "--scheduler-estimator-tls-name-annotation={{ $d.schedulerEstimatorTlsNameAnnotation }}"
- "--scheduler-estimator-endpoint-routing={{ $d.schedulerEstimatorEndpointRouting }}"
- "--scheduler-estimator-failure-policy={{ $d.schedulerEstimatorFailurePolicy }}"
- "--descheduling-interval={{ $d.deschedulingInterval }}"
- "--unschedulable-threshold={{ $d.unschedulableThreshold }}"
- "--concurrent-descheduling-syncs={{ $d.concurrentDeschedulingSyncs }}"
{{- include "ksrs.loggingArgs" $l }}
{{- range $d.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}
