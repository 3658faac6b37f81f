{{/* The name of the release's objects. */}}
{{- define "parsegate.fullname" -}}
{{- if contains "parsegate" .Release.Name -}}
{{ .Release.Name }}
{{- else -}}
{{ .Release.Name }}-parsegate
{{- end -}}
{{- end -}}

{{/* The labels a Service selects the pods by. */}}
{{- define "parsegate.selectorLabels" -}}
app.kubernetes.io/name: parsegate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels. */}}
{{- define "parsegate.labels" -}}
{{ include "parsegate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
