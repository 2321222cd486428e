-- Argo CD health check for Kubeflow training jobs (PyTorchJob, TFJob, MPIJob).
--
-- Generated into argocd-cm by trainops (kubeflow-job-health.lua in the trainops package).
-- Argo CD runs it in gopher-lua (Lua 5.1) with the live object as `obj`.
--
-- The training operator keeps one condition per type (Created, Running,
-- Restarting, Succeeded, Failed, Suspended) and flips their status between
-- "True" and "False"; several can be "True" at once (Created stays True for
-- the job's life). So the mapping goes by precedence, terminal states first:
--
--   Failed     -> Degraded     the job is over and did not succeed
--   Succeeded  -> Healthy      the job is over and the record stays (no TTL)
--   Suspended  -> Suspended    runPolicy.suspend, e.g. waiting for Kueue admission
--   Restarting -> Progressing  a replica failed and the operator is restarting it;
--                              the job can still succeed, so it is not Degraded yet
--   Running    -> Progressing  training
--   Created    -> Progressing  accepted, pods not yet all running (image pull, gang scheduling)
--   none       -> Progressing  the operator has not seen the job yet

--#include conditions.lua

local precedence = {
  { type = "Failed", health = "Degraded", fallback = "Job failed" },
  { type = "Succeeded", health = "Healthy", fallback = "Job succeeded" },
  { type = "Suspended", health = "Suspended", fallback = "Job is suspended" },
  { type = "Restarting", health = "Progressing", fallback = "Job is restarting" },
  { type = "Running", health = "Progressing", fallback = "Job is running" },
  { type = "Created", health = "Progressing", fallback = "Job is created" },
}

local hs = { status = "Progressing", message = "Waiting for the training operator to report status" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
for _, rule in ipairs(precedence) do
  local condition = true_condition(obj.status.conditions, rule.type)
  if condition ~= nil then
    hs.status = rule.health
    hs.message = describe(condition, rule.fallback)
    return hs
  end
end
return hs
