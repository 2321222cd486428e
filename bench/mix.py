"""The document mix `make bench` validates end to end: the core kinds of a real cluster
repository (Deployments, Services, ConfigMaps, batch Jobs) with the training side (PyTorchJobs,
ServiceMonitors selecting the Services, metrics Services selecting the jobs' pods). A third of
the documents are Services, so every cross-object rule (Service -> pods, ServiceMonitor ->
Services) has work to do; names are unique per group of 9, so the lookups stay realistic."""

from __future__ import annotations

_TEMPLATES = [
    """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: team-{n}
  labels: {{app: web-{i}}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web-{i}}}
  template:
    metadata:
      labels: {{app: web-{i}}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports: [{{containerPort: 80, name: http}}, {{containerPort: 9090, name: metrics}}]
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
            limits: {{cpu: "1", memory: 1Gi}}
          env:
            - {{name: MODE, value: production}}
          readinessProbe:
            httpGet: {{path: /healthz, port: http}}
""",
    """apiVersion: v1
kind: Service
metadata:
  name: web-{i}
  namespace: team-{n}
  labels: {{app: web-{i}, monitored: "true"}}
spec:
  selector: {{app: web-{i}}}
  ports:
    - {{name: http, port: 80, targetPort: http}}
    - {{name: metrics, port: 9090, targetPort: metrics}}
""",
    """apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: web-{i}
  namespace: team-{n}
spec:
  selector:
    matchLabels: {{app: web-{i}}}
  endpoints:
    - {{port: metrics, interval: 30s}}
""",
    """apiVersion: v1
kind: ConfigMap
metadata:
  name: config-{i}
  namespace: team-{n}
data:
  settings.yaml: |
    level: info
    replicas: 2
""",
    """apiVersion: v1
kind: Service
metadata:
  name: train-{i}-metrics
  namespace: team-{n}
  labels: {{app: train-{i}}}
spec:
  selector: {{training.kubeflow.org/job-name: train-{i}}}
  ports:
    - {{name: metrics, port: 8000, targetPort: metrics}}
""",
    """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train-{i}
  namespace: team-{n}
spec:
  runPolicy: {{cleanPodPolicy: All}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1.{i}
              command: [torchrun, --nproc-per-node=8, train.py, --checkpoint_dir=/ckpt]
              ports: [{{containerPort: 8000, name: metrics}}]
              resources:
                limits: {{nvidia.com/gpu: 8, memory: 512Gi, cpu: "64"}}
              volumeMounts:
                - {{name: dshm, mountPath: /dev/shm}}
                - {{name: ckpt, mountPath: /ckpt}}
          volumes:
            - name: dshm
              emptyDir: {{medium: Memory, sizeLimit: 64Gi}}
            - name: ckpt
              persistentVolumeClaim: {{claimName: ckpt-{i}}}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1.{i}
              command: [torchrun, --nproc-per-node=8, train.py, --checkpoint_dir=/ckpt]
              ports: [{{containerPort: 8000, name: metrics}}]
              resources:
                limits: {{nvidia.com/gpu: 8, memory: 512Gi, cpu: "64"}}
              volumeMounts:
                - {{name: dshm, mountPath: /dev/shm}}
                - {{name: ckpt, mountPath: /ckpt}}
          volumes:
            - name: dshm
              emptyDir: {{medium: Memory, sizeLimit: 64Gi}}
            - name: ckpt
              persistentVolumeClaim: {{claimName: ckpt-{i}}}
""",
    """apiVersion: v1
kind: Service
metadata:
  name: api-{i}
  namespace: team-{n}
spec:
  selector: {{app: web-{i}}}
  ports:
    - {{name: http, port: 8080, targetPort: 80}}
""",
    """apiVersion: batch/v1
kind: Job
metadata:
  name: migrate-{i}
  namespace: team-{n}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: ghcr.io/example/migrate:1.0
          command: [migrate, up]
          resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}
""",
    """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ckpt-{i}
  namespace: team-{n}
spec:
  accessModes: [ReadWriteMany]
  resources: {{requests: {{storage: 100Gi}}}}
""",
]
KINDS = len(_TEMPLATES)


def mixed_documents(count: int) -> str:
    """`count` documents, the nine kinds in turn (Services are three of the nine)."""
    return "---\n".join(
        _TEMPLATES[i % KINDS].format(i=i // KINDS, n=(i // KINDS) % 7) for i in range(count)
    )
