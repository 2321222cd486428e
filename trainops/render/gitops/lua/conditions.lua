-- Shared by trainops' Argo CD health scripts: each script's `--#include conditions.lua` line is
-- replaced with the functions below when trainops writes argocd-cm (one Lua chunk per kind).
-- This header is not copied.
--#body
local function true_condition(conditions, wanted)
  for _, condition in ipairs(conditions) do
    if condition.type == wanted and condition.status == "True" then
      return condition
    end
  end
  return nil
end

local function describe(condition, fallback)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  if condition.reason ~= nil and condition.reason ~= "" then
    return condition.reason
  end
  return fallback
end
