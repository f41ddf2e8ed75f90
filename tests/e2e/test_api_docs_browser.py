"""/api/docs/ renders its operations in a browser that can reach nothing but the server: Swagger UI
comes from the project's own static files (drf-spectacular-sidecar), not from a CDN."""
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_with_no_network(live_server, page: Page, screenshot):
    own = urlparse(live_server.url).netloc
    blocked: list[str] = []
    served: list[str] = []

    def only_the_server(route):
        url = route.request.url
        if urlparse(url).netloc == own:
            served.append(url)
            route.continue_()
        else:  # the network is gone: anything outside fails, as it would offline
            blocked.append(url)
            route.abort("internetdisconnected")

    page.context.route("**/*", only_the_server)
    page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Memory Service API")
    operations = page.locator(".opblock")
    expect(operations.first).to_be_visible(timeout=15000)
    assert operations.count() > 30
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/conversations/{conversation_id}/messages").first).to_be_visible()
    page.locator(".opblock-summary", has_text="/api/v1/recall").first.click()
    expect(page.locator(".opblock.is-open .opblock-section-request-body, .opblock.is-open .parameters-container").first).to_be_visible()
    screenshot("api-docs-offline")
    assert blocked == [], blocked
    assert any("/static/drf_spectacular_sidecar/" in url for url in served)
    assert any(url.endswith("/api/schema/") for url in served)
