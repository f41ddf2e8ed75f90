"""Offline means offline: no page the service serves makes the browser fetch anything from another
host. Scans every page an anonymous visitor or an operator can open (API docs, login, admin index,
every model admin's list, add and change page, every console page) and the stylesheets they link,
for http(s) addresses other than the server's own. XML namespace names (`xmlns="http://www.w3.org/..."`)
are identifiers, never fetched, and are not counted."""
import re
from urllib.parse import urljoin, urlparse

import pytest
from django.contrib import admin
from django.contrib.staticfiles import finders
from django.urls import NoReverseMatch, reverse

from conversations.services import conversation_create, messages_append
from entities.services import entity_upsert
from memory.services.forget import forget_request_create
from tests.console.helpers import make_operator, write

pytestmark = pytest.mark.django_db

ADDRESS = re.compile(r"""(?<![\w.-])(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"'<>)]*""", re.I)
NAMESPACE = re.compile(r"""xmlns(?::\w+)?=["'][^"']*["']""", re.I)
LINKED = re.compile(r"""(?:href|src)=["']([^"']+)["']""", re.I)
CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+)|@import\s+["']([^"']+)""", re.I)
OWN_HOSTS = {"testserver", "127.0.0.1", "localhost"}


def outside(text: str) -> list[str]:
    text = NAMESPACE.sub("", text)
    found = []
    for match in ADDRESS.findall(text):
        host = urlparse(match if "//" in match[:8] else "http:" + match).hostname or ""
        if host not in OWN_HOSTS:
            found.append(match)
    return found


def pages(org) -> list[str]:
    memory = write(org, "The grain dryer at the east barn was replaced in 2021").memory
    conversation, _ = conversation_create(org=org, owner_user="u1")
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "hello"}])
    forget_request_create(org=org, subject_user="u1", requested_by="op", target="memory", memory_ids=[memory.id],
                          via="console")
    entity_upsert(org=org, type="asset", external_id="A-1", name="Dryer")
    urls = [reverse("admin:index")]
    for model, model_admin in admin.site._registry.items():
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:%s_%s_changelist" % info))
        if model_admin.has_add_permission(_superuser_request()):
            urls.append(reverse("admin:%s_%s_add" % info))
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            try:
                urls.append(reverse("admin:%s_%s_change" % info, args=[first.pk]))
            except NoReverseMatch:
                pass
    from console.urls import urlpatterns

    urls += [reverse(f"console:{p.name}") for p in urlpatterns if not p.pattern.converters]
    urls.append(reverse("console:purge-org") + f"?org={org.id}")
    return urls


def _superuser_request():
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = type("U", (), {"is_active": True, "is_staff": True, "is_superuser": True,
                                  "has_perm": lambda self, *a: True})()
    return request


def stylesheet_text(url: str, client) -> str:
    path = urlparse(url).path
    if path.startswith("/static/"):
        found = finders.find(path[len("/static/"):])
        if found:
            return open(found, encoding="utf-8", errors="replace").read()
    return client.get(path).content.decode(errors="replace")


def test_no_page_references_an_outside_address(client, org):
    operator = make_operator()
    public, staff = ["/api/docs/", reverse("admin:login")], pages(org)
    offenders: dict[str, list[str]] = {}
    for url in public + staff:
        if url == staff[0]:
            client.force_login(operator)
        response = client.get(url, follow=True)
        assert response.status_code == 200, (url, response.status_code)
        html = response.content.decode(errors="replace")
        bad = outside(html)
        for link in LINKED.findall(html):
            if link.endswith(".css") or ".css?" in link:
                css = stylesheet_text(urljoin(url, link), client)
                bad += [f"{link}: {m}" for m in outside(" ".join(a or b for a, b in CSS_URL.findall(css)))]
        if bad:
            offenders[url] = sorted(set(bad))
    assert len(staff) > 20
    assert offenders == {}


def test_the_scan_catches_an_outside_address():
    assert outside('<script src="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js">')
    assert outside('<link href="//fonts.googleapis.com/css">')
    assert not outside('<svg xmlns="http://www.w3.org/2000/svg"></svg><a href="http://testserver/admin/">')
