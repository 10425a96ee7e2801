{{/*
Names, labels and the checks every template relies on.
*/}}

{{- define "eai.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: <release>-<chart>, or the release name when it already holds the chart's name. */}}
{{- define "eai.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* <fullname>-<suffix>, within 63 characters. */}}
{{- define "eai.component" -}}
{{- $full := include "eai.fullname" .root }}
{{- printf "%s-%s" ($full | trunc (int (sub 62 (len .suffix)))) .suffix | trimSuffix "-" }}
{{- end }}

{{- define "eai.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eai.labels" -}}
helm.sh/chart: {{ include "eai.chart" . }}
{{ include "eai.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: eai-gpu
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "eai.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eai.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component: {"root": $, "component": "control-plane"}. */}}
{{- define "eai.componentLabels" -}}
{{ include "eai.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "eai.componentSelectorLabels" -}}
{{ include "eai.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The control plane's objects (Deployment, Service, ServiceAccount): the full name. */}}
{{- define "eai.controlPlane.fullname" -}}
{{- include "eai.fullname" . }}
{{- end }}

{{- define "eai.sampler.fullname" -}}
{{- include "eai.component" (dict "root" . "suffix" "sampler") }}
{{- end }}

{{- define "eai.controlPlane.serviceAccountName" -}}
{{- if .Values.controlPlane.serviceAccount.create }}
{{- default (include "eai.controlPlane.fullname" .) .Values.controlPlane.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.controlPlane.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "eai.sampler.serviceAccountName" -}}
{{- if .Values.sampler.serviceAccount.create }}
{{- default (include "eai.sampler.fullname" .) .Values.sampler.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.sampler.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "eai.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The control plane's Secret (chart-made or existing). */}}
{{- define "eai.secretName" -}}
{{- default (include "eai.component" (dict "root" . "suffix" "secrets")) .Values.secrets.existingSecret }}
{{- end }}

{{- define "eai.tlsSecretName" -}}
{{- default (include "eai.component" (dict "root" . "suffix" "tls")) .Values.controlPlane.tls.existingSecret }}
{{- end }}

{{- define "eai.sampler.secretName" -}}
{{- default (include "eai.component" (dict "root" . "suffix" "sampler")) .Values.sampler.existingSecret }}
{{- end }}

{{- define "eai.caBundle.enabled" -}}
{{- if or .Values.caBundle.pem .Values.caBundle.existingConfigMap }}true{{ end }}
{{- end }}

{{- define "eai.caBundle.configMapName" -}}
{{- default (include "eai.component" (dict "root" . "suffix" "ca")) .Values.caBundle.existingConfigMap }}
{{- end }}

{{/* "true" when each optional secret is set (chart-made: the value; existing: existingSecretProvides). */}}
{{- define "eai.has.clickhouseUrl" -}}
{{- if .Values.secrets.existingSecret }}{{ if .Values.secrets.existingSecretProvides.clickhouseUrl }}true{{ end }}
{{- else if .Values.secrets.clickhouseUrl }}true{{ end }}
{{- end }}

{{- define "eai.has.anomalyWebhookSecret" -}}
{{- if .Values.secrets.existingSecret }}{{ if .Values.secrets.existingSecretProvides.anomalyWebhookSecret }}true{{ end }}
{{- else if .Values.secrets.anomalyWebhookSecret }}true{{ end }}
{{- end }}

{{- define "eai.has.metricsToken" -}}
{{- if .Values.secrets.existingSecret }}{{ if .Values.secrets.existingSecretProvides.metricsToken }}true{{ end }}
{{- else if .Values.secrets.metricsToken }}true{{ end }}
{{- end }}

{{- define "eai.has.bootstrapAdminKey" -}}
{{- if .Values.secrets.existingSecret }}{{ if .Values.secrets.existingSecretProvides.bootstrapAdminKey }}true{{ end }}
{{- else if or .Values.secrets.bootstrapAdminKey .Values.secrets.generateBootstrapAdminKey }}true{{ end }}
{{- end }}

{{- define "eai.scheme" -}}
{{- if .Values.controlPlane.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{/* The URL the samplers send to. */}}
{{- define "eai.sampler.controlPlaneUrl" -}}
{{- if .Values.sampler.controlPlaneUrl }}
{{- .Values.sampler.controlPlaneUrl }}
{{- else }}
{{- printf "%s://%s.%s.svc:%d" (include "eai.scheme" .) (include "eai.controlPlane.fullname" .) .Release.Namespace (int .Values.controlPlane.service.port) }}
{{- end }}
{{- end }}

{{/*
The rules values cannot express alone; each stops the render with a message that says what to change.
*/}}
{{- define "eai.validate" -}}
{{- $replicas := int .Values.controlPlane.replicas }}
{{- if eq .Values.store.type "sqlite" }}
{{- if gt $replicas 1 }}
{{- fail (printf "store.type=sqlite keeps its data in one file on one volume: it runs with controlPlane.replicas=1 only (got %d); use store.type=postgres for several replicas" $replicas) }}
{{- end }}
{{- if and (not .Values.secrets.existingSecret) .Values.secrets.databaseUrl }}
{{- fail "secrets.databaseUrl is for store.type=postgres: with store.type=sqlite the store is the file eai-gpu.db on the chart's volume (leave databaseUrl empty, or set store.type=postgres)" }}
{{- end }}
{{- end }}
{{- if eq .Values.store.type "postgres" }}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.databaseUrl) }}
{{- fail "store.type=postgres needs the database's URL: set secrets.databaseUrl (postgres://USER:PASS@HOST:5432/DB) or secrets.existingSecret (a Secret with the key secrets.keys.databaseUrl)" }}
{{- end }}
{{- if and .Values.secrets.databaseUrl (not (regexMatch "^postgres(ql)?://" .Values.secrets.databaseUrl)) }}
{{- fail "secrets.databaseUrl must start with postgres:// or postgresql:// when store.type=postgres" }}
{{- end }}
{{- end }}
{{- if and .Values.controlPlane.config.anomalyWebhookUrl (not (include "eai.has.anomalyWebhookSecret" .)) }}
{{- fail "controlPlane.config.anomalyWebhookUrl needs the key its posts are signed with: set secrets.anomalyWebhookSecret (16 characters or more), or secrets.existingSecretProvides.anomalyWebhookSecret=true with existingSecret" }}
{{- end }}
{{- if and (include "eai.has.anomalyWebhookSecret" .) (not .Values.controlPlane.config.anomalyWebhookUrl) }}
{{- fail "secrets.anomalyWebhookSecret signs the anomaly webhook: set controlPlane.config.anomalyWebhookUrl too (or leave the secret empty)" }}
{{- end }}
{{- if and .Values.controlPlane.config.clickhouseCluster (not (include "eai.has.clickhouseUrl" .)) }}
{{- fail "controlPlane.config.clickhouseCluster names the ClickHouse cluster of the replica: set secrets.clickhouseUrl (one of its servers) too" }}
{{- end }}
{{- if and (eq (toString .Values.controlPlane.config.allocationSource) "clickhouse") (not (include "eai.has.clickhouseUrl" .)) }}
{{- fail "controlPlane.config.allocationSource=clickhouse reads the ClickHouse replica: set secrets.clickhouseUrl (or secrets.existingSecretProvides.clickhouseUrl=true with existingSecret)" }}
{{- end }}
{{- if and .Values.controlPlane.tls.enabled (not .Values.controlPlane.tls.existingSecret) (not (and .Values.controlPlane.tls.cert .Values.controlPlane.tls.key)) }}
{{- fail "controlPlane.tls.enabled needs the certificate: controlPlane.tls.existingSecret (a kubernetes.io/tls Secret) or both controlPlane.tls.cert and controlPlane.tls.key (PEM)" }}
{{- end }}
{{- if and .Values.caBundle.pem .Values.caBundle.existingConfigMap }}
{{- fail "caBundle: set caBundle.pem or caBundle.existingConfigMap, not both" }}
{{- end }}
{{- if and .Values.sampler.enabled (eq .Values.sampler.spool.type "hostPath") (not (hasPrefix "/" .Values.sampler.spool.hostPath.path)) }}
{{- fail "sampler.spool.hostPath.path must be an absolute path on the node" }}
{{- end }}
{{- end }}

{{/* Pod anti-affinity per node for the control plane (several replicas): soft, hard, or none; user affinity wins. */}}
{{- define "eai.controlPlane.affinity" -}}
{{- if .Values.controlPlane.affinity }}
{{- toYaml .Values.controlPlane.affinity }}
{{- else if le (int .Values.controlPlane.replicas) 1 }}
{{- else if eq .Values.controlPlane.podAntiAffinity "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "eai.componentSelectorLabels" (dict "root" . "component" "control-plane") | nindent 10 }}
{{- else if eq .Values.controlPlane.podAntiAffinity "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "eai.componentSelectorLabels" (dict "root" . "component" "control-plane") | nindent 12 }}
{{- end }}
{{- end }}
