-- sequence_holder: ARGV[2] a job id. The id of the first job of its sequence that has not
-- ended, when that is an earlier job; false otherwise (no such job, no sequence, ended).
local j = load(ARGV[2])
if not j or not j.sq or not LIVE[j.state] then return false end
local head = sequence_head(j.sq)
if head ~= nil and tonumber(head) < tonumber(j.id) then return tonumber(head) end
return false
