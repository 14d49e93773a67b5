#!/bin/bash
# Entry point of deploy/local/Containerfile.gateway: the mounted configuration
# (/etc/signet/gateway.conf) with the container's nameserver as its resolver, then nginx.
set -euo pipefail
ns="$(awk '/^nameserver/ { print $2; exit }' /etc/resolv.conf)"
mkdir -p /tmp/nginx
sed -e "s/^resolver 127\.0\.0\.11 /resolver ${ns:-127.0.0.11} /" /etc/signet/gateway.conf >/tmp/nginx/default.conf
cat >/tmp/nginx/nginx.conf <<CONF
worker_processes 2;
pid /tmp/nginx/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path /tmp/nginx/body;
    proxy_temp_path /tmp/nginx/proxy;
    fastcgi_temp_path /tmp/nginx/fastcgi;
    uwsgi_temp_path /tmp/nginx/uwsgi;
    scgi_temp_path /tmp/nginx/scgi;
    include /tmp/nginx/default.conf;
}
CONF
exec nginx -c /tmp/nginx/nginx.conf -g 'daemon off;'
