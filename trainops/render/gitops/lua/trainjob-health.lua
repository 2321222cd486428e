-- Argo CD health check for Kubeflow Trainer v2 TrainJobs.
--
-- Generated into argocd-cm by trainops (trainjob-health.lua in the trainops package).
-- Argo CD runs it in gopher-lua (Lua 5.1) with the live object as `obj`.
--
-- A TrainJob (v2.3) has the condition types Suspended, Complete and Failed (and Created in
-- some releases); it has no Running condition: that it trains shows in status.jobsStatus,
-- one entry per replicated job with active/ready/succeeded/failed/suspended counts of its
-- child Jobs (JobSet v0.12.0 calculateReplicatedJobStatuses). `active` counts a child Job
-- with one Pending pod (a gang waiting for GPUs); `ready` only one whose pods all run. So
-- running means some child Job is ready and no active one is not: the v1 jobs' Running.
-- Terminal states first:
--
--   Failed=True     -> Degraded     the job is over and did not succeed
--   Complete=True   -> Healthy      the job is over and the record stays (no TTL in v2)
--   Suspended=True  -> Suspended    spec.suspend, e.g. waiting for Kueue admission
--   pods ready      -> Progressing  training ("TrainJob is running")
--   pods pending    -> Progressing  scheduled or waiting for its gang ("waiting for pods")
--   otherwise       -> Progressing  the Trainer or JobSet has not started pods yet

--#include conditions.lua

local precedence = {
  { type = "Failed", health = "Degraded", fallback = "TrainJob failed" },
  { type = "Complete", health = "Healthy", fallback = "TrainJob completed" },
  { type = "Suspended", health = "Suspended", fallback = "TrainJob is suspended" },
}

local hs = { status = "Progressing", message = "Waiting for the Trainer to start the TrainJob" }
if obj.status == nil then
  return hs
end
if obj.status.conditions ~= nil then
  for _, rule in ipairs(precedence) do
    local condition = true_condition(obj.status.conditions, rule.type)
    if condition ~= nil then
      hs.status = rule.health
      hs.message = describe(condition, rule.fallback)
      return hs
    end
  end
end
if obj.status.jobsStatus ~= nil then
  local ready, waiting = 0, 0
  for _, job in ipairs(obj.status.jobsStatus) do
    local job_ready = job.ready or 0
    ready = ready + job_ready
    if (job.active or 0) > job_ready then
      waiting = waiting + (job.active or 0) - job_ready
    end
  end
  if waiting > 0 then
    hs.message = "TrainJob is waiting for pods (" .. waiting .. " job(s) with pods not ready)"
  elseif ready > 0 then
    hs.message = "TrainJob is running (" .. ready .. " ready job(s))"
  end
end
return hs
