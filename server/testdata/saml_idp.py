#!/usr/bin/python3
"""A SAML 2.0 identity provider for tifeeds' tests, built on pysaml2's
saml2.server.Server (Debian's python3-pysaml2; it signs with the xmlsec1
binary). Run it with /usr/bin/python3.

    saml_idp.py --dir DIR [--port 0] [--entity-id URL] [--lifetime SECONDS]
                [--sp-prefix URL]

It writes DIR/cert.pem and DIR/key.pem (the IdP's signing pair) and
DIR/other-cert.pem and DIR/other-key.pem (a pair no tenant trusts) unless
they exist, then serves on 127.0.0.1 and prints one line,
"listening http://127.0.0.1:PORT", once it accepts connections.

Endpoints:
  GET /sso?SAMLRequest=...&RelayState=...   the HTTP-Redirect SSO service.
      Without `user`, a sign-in form asks for the user name; with it, the
      answer is pysaml2's auto-posting form carrying the signed response to
      the request's AssertionConsumerServiceURL. What a test may bend:
        user=NAME           the NameID (format unspecified)
        key=other           sign with the pair no tenant trusts
        destination=URL     the Response Destination and the Recipient
        audience=ENTITYID   the Audience (and whose metadata is used)
        sign=assertion|response|both   what is signed (default assertion)
  GET /unsolicited?sp=ENTITYID&user=NAME    an IdP-initiated response (no
      InResponseTo) to that SP's ACS.
  GET /metadata                              the IdP's metadata.

The SP's metadata is fetched from its entity ID (tifeeds' metadata URL), on
first use, when the entity ID starts with --sp-prefix.
"""

import argparse
import datetime
import html
import os
import sys
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_UNSPECIFIED, NameID
from saml2.saml import AUTHN_PASSWORD_PROTECTED
from saml2.server import Server
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256


def ensure_pair(directory, prefix, common_name):
    cert_path = os.path.join(directory, prefix + "cert.pem")
    key_path = os.path.join(directory, prefix + "key.pem")
    if os.path.exists(cert_path) and os.path.exists(key_path):
        return cert_path, key_path
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def make_server(entity_id, base, cert, key, lifetime):
    conf = IdPConfig()
    conf.load(
        {
            "entityid": entity_id,
            "service": {
                "idp": {
                    "endpoints": {
                        "single_sign_on_service": [(base + "/sso", BINDING_HTTP_REDIRECT)],
                    },
                    "policy": {"default": {"lifetime": {"seconds": lifetime}}},
                    "name_id_format": [NAMEID_FORMAT_UNSPECIFIED],
                    "want_authn_requests_signed": False,
                },
            },
            "key_file": key,
            "cert_file": cert,
            "xmlsec_binary": "/usr/bin/xmlsec1",
            "metadata": {},
        }
    )
    return Server(config=conf)


class IdP:
    def __init__(self, args, base):
        self.sp_prefix = args.sp_prefix
        cert, key = ensure_pair(args.dir, "", "tifeeds test IdP")
        other_cert, other_key = ensure_pair(args.dir, "other-", "an untrusted IdP")
        entity_id = args.entity_id or base + "/metadata"
        self.server = make_server(entity_id, base, cert, key, args.lifetime)
        self.other = make_server(entity_id, base, other_cert, other_key, args.lifetime)
        self.loaded = set()

    def load_sp(self, entity_id):
        if entity_id in self.loaded:
            return
        if not entity_id.startswith(self.sp_prefix):
            raise ValueError("unknown SP " + entity_id)
        with urllib.request.urlopen(entity_id, timeout=10) as r:
            xml = r.read().decode("utf-8")
        for s in (self.server, self.other):
            s.metadata.load("inline", xml)
        self.loaded.add(entity_id)

    def respond(self, q, in_response_to, acs, sp_entity_id, relay_state):
        user = q.get("user", "")
        audience = q.get("audience") or sp_entity_id
        self.load_sp(audience)
        destination = q.get("destination") or acs
        server = self.other if q.get("key") == "other" else self.server
        sign = q.get("sign", "assertion")
        resp = server.create_authn_response(
            identity={},
            in_response_to=in_response_to,
            destination=destination,
            sp_entity_id=audience,
            name_id=NameID(format=NAMEID_FORMAT_UNSPECIFIED, text=user),
            authn={"class_ref": AUTHN_PASSWORD_PROTECTED},
            sign_assertion=sign in ("assertion", "both"),
            sign_response=sign in ("response", "both"),
            sign_alg=SIG_RSA_SHA256,
            digest_alg=DIGEST_SHA256,
        )
        args = server.apply_binding(BINDING_HTTP_POST, str(resp), acs, relay_state, response=True)
        return args["data"]


def sign_in_form(q):
    hidden = "".join(
        '<input type="hidden" name="%s" value="%s">' % (html.escape(k), html.escape(v))
        for k, v in q.items()
        if k != "user"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Test IdP</title></head><body>"
        "<h1>Test IdP sign-in</h1><form method='get' action='/sso'>%s"
        "<label>User name <input name='user' id='idp-user'></label>"
        "<button type='submit' id='idp-submit'>Sign in</button></form></body></html>" % hidden
    )


def handler_for(idp):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *a):
            sys.stderr.write("idp: " + (fmt % a) + "\n")

        def answer(self, status, body, ctype="text/html; charset=utf-8"):
            b = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(u.query))
            try:
                if u.path == "/metadata":
                    self.answer(200, create_metadata_string(None, idp.server.config, 4, None, None, None, None, None).decode("utf-8"), "application/samlmetadata+xml")
                elif u.path == "/sso":
                    if "SAMLRequest" not in q:
                        self.answer(400, "no SAMLRequest")
                        return
                    if not q.get("user"):
                        self.answer(200, sign_in_form(q))
                        return
                    req = idp.server.parse_authn_request(q["SAMLRequest"], BINDING_HTTP_REDIRECT)
                    msg = req.message
                    self.answer(200, idp.respond(q, msg.id, msg.assertion_consumer_service_url, msg.issuer.text, q.get("RelayState", "")))
                elif u.path == "/unsolicited":
                    sp = q["sp"]
                    idp.load_sp(sp)
                    acs = sp[: -len("/metadata")] + "/acs" if sp.endswith("/metadata") else sp
                    self.answer(200, idp.respond(q, None, acs, sp, ""))
                else:
                    self.answer(404, "not found")
            except Exception as e:  # the test reads the message
                self.answer(500, "idp error: %r" % (e,), "text/plain; charset=utf-8")

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--entity-id", default="")
    p.add_argument("--lifetime", type=int, default=300)
    p.add_argument("--sp-prefix", default="http://127.0.0.1:")
    args = p.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), None)
    base = "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.RequestHandlerClass = handler_for(IdP(args, base))
    print("listening " + base, flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
