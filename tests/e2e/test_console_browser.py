"""An operator audits a supersede chain in the console and approves forgetting; recall then misses it."""
import re

import pytest
from playwright.sync_api import Page, expect

from memory.models import ForgetRequest, Memory
from memory.services.forget import forget_request_create
from tenancy.services import org_get_or_create
from tests.console.helpers import NEW_STYLE, OLD_STYLE, make_operator, recalled_ids, seed_supersede_chain

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERY = "how should maintenance reports be summarised"


def login(page: Page, base_url: str, username: str = "operator", password: str = "op-pass-123") -> None:
    page.goto(f"{base_url}/admin/")
    expect(page).to_have_url(re.compile(r"/admin/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_contain_text("Memory service console")


def test_operator_reads_the_chain_and_approves_forgetting(live_server, page: Page, screenshot):
    org = org_get_or_create(slug="e2e-org")
    old, new = seed_supersede_chain(org, user_id="farmer-1")
    request = forget_request_create(org=org, subject_user="farmer-1", requested_by="farmer-1", target="memory",
                                    memory_ids=[new.id], via="console")
    make_operator()
    assert new.id in recalled_ids(org, "farmer-1", QUERY)  # the memory is recallable before the decision

    login(page, live_server.url)
    # Find the memory by search.
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Memories").click()
    page.fill("#searchbar", "one-line summary")
    page.press("#searchbar", "Enter")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("active")
    screenshot("01-memory-search")

    # Open it and read the supersede chain: the older memory it replaced is on the timeline.
    rows.first.get_by_role("link", name=re.compile("one-line summary")).click()
    expect(page).to_have_url(re.compile(rf"/admin/memory/memory/{new.id}/change/"))
    chain = page.locator("#supersede-chain")
    expect(chain.locator("li")).to_have_count(2)
    expect(chain.locator("li").nth(0)).to_contain_text(f"memory {old.id}")
    expect(chain.locator("li").nth(0)).to_contain_text("superseded (older)")
    expect(chain.locator("li").nth(0)).to_contain_text(OLD_STYLE[:30])
    expect(chain.locator("li.current")).to_contain_text(NEW_STYLE[:30])
    expect(page.locator("#forget-requests")).to_contain_text(f"request {request.id}")
    screenshot("02-memory-detail")

    # From the old memory, the chain reads forward to the one that replaced it.
    chain.get_by_role("link", name=f"memory {old.id}").click()
    expect(page.locator("#supersede-chain li").nth(1)).to_contain_text("superseded by (newer)")
    expect(page.locator("#supersede-chain li.current")).to_contain_text(f"memory {old.id}")

    # Approve the pending forget request with the bulk action.
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Forget requests").click()
    row = page.locator("#result_list tbody tr", has_text="farmer-1")
    expect(row).to_have_count(1)
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "approve_selected")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("Approved 1 forget request(s) as operator")
    page.goto(f"{live_server.url}/admin/memory/forgetrequest/")
    expect(page.locator("#result_list tbody tr", has_text="farmer-1")).to_contain_text("executed")
    screenshot("03-forget-request-approved")

    request.refresh_from_db()
    assert (request.status, request.operator) == ("executed", "operator")
    assert Memory.objects.get(id=new.id).status == "forgotten"
    assert new.id not in recalled_ids(org, "farmer-1", QUERY)

    page.goto(f"{live_server.url}/admin/memory/memory/{new.id}/change/")
    expect(page.locator("#versions")).to_contain_text("(redacted)")
    assert ForgetRequest.objects.filter(org=org, status="executed").count() == 1


def test_operator_pages_render_in_the_browser(live_server, page: Page, screenshot):
    org = org_get_or_create(slug="e2e-org")
    seed_supersede_chain(org, user_id="farmer-1")
    make_operator()
    login(page, live_server.url)

    page.goto(f"{live_server.url}/admin/console/recall/?org={org.id}&user_id=farmer-1")
    page.fill("#id_query", QUERY)
    page.click("input[type=submit][value=Explain]")
    expect(page.locator("#candidates")).to_contain_text("returned")
    expect(page.locator("#rank tbody tr").first).to_contain_text("returned")
    screenshot("04-recall-explainer")

    page.goto(f"{live_server.url}/admin/console/health/")
    expect(page.locator("#projection-lag")).to_contain_text("lagging memories: 0")
    expect(page.locator("#counts")).to_contain_text("e2e-org")
    page.select_option("#id_org", str(org.id))
    page.fill("#id_user_id", "farmer-1")
    page.click("input[type=submit][value='Run probe']")
    expect(page.locator("#latency-runs tbody tr")).to_have_count(5)
    screenshot("05-health")

    page.goto(f"{live_server.url}/admin/console/api-keys/")
    page.select_option("#id_org", str(org.id))
    page.fill("#id_name", "field-agent")
    page.click("input[type=submit][value='Create key']")
    expect(page.locator("#plaintext-key")).to_contain_text(re.compile(r"^\s*mk_"))
    screenshot("06-api-key-created")
    page.get_by_role("row", name=re.compile("field-agent")).get_by_role("button", name="Revoke").click()
    expect(page.locator(".messagelist")).to_contain_text("revoked")
