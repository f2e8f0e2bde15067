#!/bin/sh
# The servers' content for the egress tests (issue 35), made in folder $1: a certificate for the test
# names (its own authority), a file, a git repository served over "dumb" HTTP, an npm package with its
# packument, and a Python wheel behind a simple index. `{ORIGIN}` in a .json or .html file is replaced by
# the server with the origin it was asked under (the port is known only once it listens).
set -eu
dir=$1
mkdir -p "$dir/root"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout key.pem -out cert.pem -subj "/CN=portcullis egress test" \
  -addext "subjectAltName=DNS:api.test,DNS:git.test,DNS:registry.test,DNS:pypi.test,DNS:b.test" \
  -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
echo "hello from api.test" > root/hello.txt

# git: a bare repository with one commit, its refs listed for dumb HTTP.
git init -q --bare root/repo.git
git init -q work
git -C work -c user.name=t -c user.email=t@t commit -q --allow-empty -m "first commit over the egress proxy"
git -C work push -q ../root/repo.git HEAD:refs/heads/main
git --git-dir=root/repo.git symbolic-ref HEAD refs/heads/main
git --git-dir=root/repo.git update-server-info

# npm: one package, its tarball and packument (the integrity npm checks).
mkdir -p pkg/package root/tiny-egress-pkg/-
printf '{"name":"tiny-egress-pkg","version":"1.0.0","main":"index.js"}\n' > pkg/package/package.json
echo "module.exports = 'tiny';" > pkg/package/index.js
tar czf root/tiny-egress-pkg/-/tiny-egress-pkg-1.0.0.tgz -C pkg package
integrity="sha512-$(openssl dgst -sha512 -binary root/tiny-egress-pkg/-/tiny-egress-pkg-1.0.0.tgz | base64 -w0)"
cat > root/tiny-egress-pkg/index.json <<JSON
{"name":"tiny-egress-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tiny-egress-pkg","version":"1.0.0","main":"index.js","dist":{"tarball":"{ORIGIN}/tiny-egress-pkg/-/tiny-egress-pkg-1.0.0.tgz","integrity":"$integrity"}}}}
JSON

# pip: a wheel behind a simple index.
mkdir -p root/simple/tinyegress root/packages
python3 - <<'PY'
import zipfile
files = {
    "tinyegress/__init__.py": "NAME = 'tinyegress'\n",
    "tinyegress-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinyegress\nVersion: 1.0\n",
    "tinyegress-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: portcullis-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
files["tinyegress-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "tinyegress-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("root/packages/tinyegress-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
PY
cat > root/simple/tinyegress/index.html <<HTML
<!DOCTYPE html><html><body><a href="{ORIGIN}/packages/tinyegress-1.0-py3-none-any.whl">tinyegress-1.0-py3-none-any.whl</a></body></html>
HTML
