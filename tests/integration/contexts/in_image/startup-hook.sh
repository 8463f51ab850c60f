# Sourced before the trial starts, inside its container.
echo "hook saw: $(cat /etc/assay-test-image 2>/dev/null || echo 'no test image')"
export HOOK_VAR=set-by-the-hook
