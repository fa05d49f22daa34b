{{/* Names and labels, as `helm create` makes them. */}}
{{- define "a2a-guard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "a2a-guard.fullname" -}}
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

{{- define "a2a-guard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "a2a-guard.commonLabels" -}}
helm.sh/chart: {{ include "a2a-guard.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: a2a-guard
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "a2a-guard.guardianSelectorLabels" -}}
app.kubernetes.io/name: {{ include "a2a-guard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: guardian
{{- end }}

{{/* Selector labels of an agent: (dict "root" $ "agent" $agent) */}}
{{- define "a2a-guard.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ .agent.name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "a2a-guard.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "a2a-guard.guardianName" -}}
{{- printf "%s-guardian" (include "a2a-guard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "a2a-guard.guardianUrl" -}}
{{- if .Values.guardianUrl }}
{{- .Values.guardianUrl }}
{{- else if .Values.guardian.enabled }}
{{- printf "http://%s:%v" (include "a2a-guard.guardianName" .) .Values.guardian.port }}
{{- else }}
{{- fail "set guardianUrl, or guardian.enabled=true" }}
{{- end }}
{{- end }}

{{- define "a2a-guard.tokenSecretName" -}}
{{- default (printf "%s-guardian-token" (include "a2a-guard.fullname" .)) .Values.guardianToken.existingSecret }}
{{- end }}

{{- define "a2a-guard.policyConfigMapName" -}}
{{- default (printf "%s-policy" (include "a2a-guard.fullname" .)) .Values.guardian.existingConfigMap }}
{{- end }}

{{- define "a2a-guard.policyJson" -}}
{{- if .Values.guardian.policyJson }}
{{- .Values.guardian.policyJson }}
{{- else }}
{{- .Files.Get "files/policy.json" }}
{{- end }}
{{- end }}

{{/* The token as an environment variable, from the Secret. */}}
{{- define "a2a-guard.tokenEnv" -}}
- name: A2A_GUARD_GUARDIAN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "a2a-guard.tokenSecretName" . }}
      key: {{ .Values.guardianToken.key }}
{{- end }}

{{/*
The a2a-guard native sidecar of an agent pod: (dict "root" $ "agent" $agent).
Probes on the admin port: startup and liveness ask /healthz (the process is up), readiness asks
/readyz (guardian answers ping, the upstream agent's card is reachable, not draining).
*/}}
{{- define "a2a-guard.sidecar" -}}
{{- $root := .root }}
{{- $agent := .agent }}
{{- $s := $root.Values.sidecar }}
- name: a2a-guard
  image: {{ include "a2a-guard.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  # A native sidecar: an init container that keeps running (Kubernetes 1.29+). It is started and
  # its startup probe passes before the agent starts, and it is stopped after the agent exits.
  restartPolicy: Always
  env:
    - name: A2A_GUARD_ROLE
      value: {{ $agent.role | quote }}
    - name: A2A_GUARD_PORT
      value: {{ $s.port | quote }}
    {{- if eq $agent.role "client" }}
    # Only the agent in this pod may use a client-side sidecar.
    - name: A2A_GUARD_HOST
      value: "127.0.0.1"
    - name: A2A_GUARD_UPSTREAM_URL
      value: {{ required (printf "agents[%s].upstreamUrl is required for role client" $agent.name) $agent.upstreamUrl | quote }}
    {{- else }}
    - name: A2A_GUARD_UPSTREAM_URL
      value: {{ printf "http://127.0.0.1:%v" (required (printf "agents[%s].port is required for role server" $agent.name) $agent.port) | quote }}
    {{- with $agent.publicUrl }}
    - name: A2A_GUARD_PUBLIC_URL
      value: {{ . | quote }}
    {{- end }}
    {{- with $root.Values.taskStore.existingSecret }}
    # Task owners shared by every replica (taskStore in values.yaml).
    - name: A2A_GUARD_TASK_OWNERSHIP
      value: "true"
    - name: A2A_GUARD_TASK_STORE_URL
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $root.Values.taskStore.key }}
    {{- end }}
    {{- end }}
    {{- if or (and (eq $agent.role "server") $agent.grpcPort) (and (eq $agent.role "client") $agent.grpcUpstreamUrl) }}
    # The A2A gRPC binding, guarded on its own port (README: The gRPC binding).
    - name: A2A_GUARD_GRPC_PORT
      value: {{ $s.grpcPort | quote }}
    - name: A2A_GUARD_GRPC_UPSTREAM_URL
      value: {{ (eq $agent.role "server") | ternary (printf "http://127.0.0.1:%v" $agent.grpcPort) $agent.grpcUpstreamUrl | quote }}
    {{- end }}
    - name: A2A_GUARD_ADMIN_PORT
      value: {{ $s.adminPort | quote }}
    - name: A2A_GUARD_GUARDIAN_URL
      value: {{ include "a2a-guard.guardianUrl" $root | quote }}
    {{- include "a2a-guard.tokenEnv" $root | nindent 4 }}
    - name: A2A_GUARD_GUARDIAN_TIMEOUT_MS
      value: {{ $s.guardianTimeoutMs | quote }}
    - name: A2A_GUARD_FAIL_MODE
      value: {{ $s.failMode | quote }}
    - name: A2A_GUARD_INSPECT_RESPONSES
      value: {{ $s.inspectResponses | quote }}
    - name: A2A_GUARD_DRAIN_TIMEOUT_MS
      value: {{ $s.drainTimeoutMs | quote }}
    - name: A2A_GUARD_SHUTDOWN_DELAY_MS
      value: {{ $s.shutdownDelayMs | quote }}
    {{- with $s.readinessRequires }}
    - name: A2A_GUARD_READINESS_REQUIRES
      value: {{ . | quote }}
    {{- end }}
    - name: A2A_GUARD_LOG_LEVEL
      value: {{ $s.logLevel | quote }}
    - name: A2A_GUARD_MAX_INFLIGHT_BODY_BYTES
      value: {{ $s.maxInflightBodyBytes | int64 | quote }}
    {{- with $agent.observedAgent }}
    {{- range $key, $var := dict "id" "ID" "name" "NAME" "url" "URL" "version" "VERSION" "description" "DESCRIPTION" "instructions" "INSTRUCTIONS" "providerName" "PROVIDER_NAME" "providerUrl" "PROVIDER_URL" }}
    {{- with index $agent.observedAgent $key }}
    - name: A2A_GUARD_OBSERVED_AGENT_{{ $var }}
      value: {{ . | quote }}
    {{- end }}
    {{- end }}
    {{- end }}
    {{- range $name, $value := merge (dict) ($agent.sidecarEnv | default dict) $s.env }}
    - name: A2A_GUARD_{{ $name }}
      value: {{ $value | quote }}
    {{- end }}
  ports:
    {{- if ne $agent.role "client" }}
    - name: a2a
      containerPort: {{ $s.port }}
    {{- if $agent.grpcPort }}
    - name: a2a-grpc
      containerPort: {{ $s.grpcPort }}
    {{- end }}
    {{- end }}
    - name: admin
      containerPort: {{ $s.adminPort }}
  startupProbe:
    httpGet: {path: /healthz, port: admin}
    {{- toYaml $s.startupProbe | nindent 4 }}
  readinessProbe:
    httpGet: {path: /readyz, port: admin}
    {{- toYaml $s.readinessProbe | nindent 4 }}
  livenessProbe:
    httpGet: {path: /healthz, port: admin}
    {{- toYaml $s.livenessProbe | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml $s.resources | nindent 4 }}
{{- end }}

{{/*
Grace period of an agent pod: the agent stops first (preStop sleep, then its own stop time), then
the sidecar keeps accepting (SHUTDOWN_DELAY_MS) and drains (DRAIN_TIMEOUT_MS), plus 5 s of margin.
(dict "root" $ "agent" $agent)
*/}}
{{- define "a2a-guard.agentGraceSeconds" -}}
{{- $drain := div (add .root.Values.sidecar.drainTimeoutMs .root.Values.sidecar.shutdownDelayMs 999) 1000 }}
{{- $preStop := 0 }}
{{- if ne .agent.role "client" }}{{ $preStop = .agent.preStopSleepSeconds | default 0 }}{{ end }}
{{- add $preStop (.agent.stopSeconds | default 10) $drain 5 }}
{{- end }}

{{/*
mode: sidecar-only: the sidecar container with its plain variables moved to a ConfigMap (envFrom)
and only the Secret references left in env, so re-applying the patch after an upgrade leaves no
stale variable behind (a strategic merge keeps env entries the patch no longer names).
*/}}
{{- define "a2a-guard.workloadSidecar" -}}
{{- $c := include "a2a-guard.sidecar" (dict "root" . "agent" .Values.workload) | fromYamlArray | first }}
{{- $plain := dict }}
{{- $refs := list }}
{{- range $c.env }}
{{- if hasKey . "valueFrom" }}{{ $refs = append $refs . }}{{ else }}{{ $_ := set $plain .name .value }}{{ end }}
{{- end }}
{{- $_ := set $c "env" $refs }}
{{- $_ := set $c "envFrom" (list (dict "configMapRef" (dict "name" (printf "%s-a2a-guard-env" .Values.workload.name)))) }}
{{- dict "container" $c "vars" $plain | toYaml }}
{{- end }}

{{/*
The strategic-merge patch that adds the sidecar to the workload's pods. Lists with a merge key
(initContainers by name) merge, so the agent's own containers stay as they are; the checksum
restarts the pods when the sidecar's configuration changed.
*/}}
{{- define "a2a-guard.workloadPatch" -}}
{{- $w := .Values.workload }}
{{- $sc := include "a2a-guard.workloadSidecar" . | fromYaml }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $w.name }}
spec:
  template:
    metadata:
      annotations:
        a2a-guard/config-checksum: {{ toJson $sc | sha256sum }}
    spec:
      initContainers:
        {{- list $sc.container | toYaml | nindent 8 }}
{{- end }}

{{/* The pods whose sidecars the metrics Service selects. */}}
{{- define "a2a-guard.sidecarPodSelector" -}}
{{- if eq .Values.mode "sidecar-only" }}
{{- toYaml .Values.workload.selectorLabels }}
{{- else }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}
{{- end }}
