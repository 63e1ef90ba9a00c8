"""The entity browser through the test client: classes, tables, detail pages, notes, files,
cloning and access. The create and edit forms are in ``test_entity_forms.py``."""
from __future__ import annotations

import io
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import DEFAULT_DEPARTMENT
from tests.helpers.pages import HTMX, page_login, post_form
from tests.helpers.statements import statements
from tests.web.conftest import entity_reads, fetch, grant, hidden, html_of, row_ids, save

# ---- Login and navigation ---------------------------------------------------------------------

def test_pages_require_login_and_come_back(client):
    response = client.get("/entities/Sample?filter=name%20eq%20'x'")
    assert response.status_code == 302
    location = urlsplit(response.headers["Location"])
    assert location.path == "/login"
    assert parse_qs(location.query) == {"next": ["/entities/Sample?filter=name%20eq%20'x'"]}
    htmx = client.get("/entities/Sample", headers=HTMX)
    assert htmx.status_code == 204
    assert htmx.headers["HX-Redirect"] == "/login?next=/entities/Sample"


def test_nav_links_the_browser(signed_in):
    assert 'href="/entities"' in html_of(signed_in.get("/"))
    page = signed_in.get("/entities")
    assert '<a href="/entities" aria-current="page">Entities</a>' in html_of(page)
    assert page.headers["Cache-Control"] == "no-store"


def test_class_cards_count_visible_entities(signed_in, sample, other_department, make_user,
                                            api_as):
    make_user("dave", department_id=other_department)
    save(api_as("dave"), {"eClass": "Sample", "name": "Hidden from alice"})
    html = html_of(signed_in.get("/entities"))
    card = re.search(r'id="class-Sample">.*?</section>', html, re.S).group(0)
    assert '<span class="count">1</span> entity' in card
    assert 'href="/entities/Sample/new"' in card
    file_card = re.search(r'id="class-File">.*?</section>', html, re.S).group(0)
    assert "/entities/File/new" not in file_card, "files come from uploads"
    project_card = re.search(r'id="class-Project">.*?</section>', html, re.S).group(0)
    assert "/entities/Project/new" not in project_card, "needs DATA_MANAGER"
    plate_card = re.search(r'id="class-Plate">.*?</section>', html, re.S).group(0)
    assert '<span class="count">0</span> entities' in plate_card


def test_class_cards_are_counted_in_one_query(app, signed_in, sample):
    with statements(app) as seen:
        response = signed_in.get("/entities")
    assert response.status_code == 200
    [count] = entity_reads(seen)
    assert "GROUP BY entity.eclass" in count


def test_unknown_class_is_a_404_page(signed_in):
    response = signed_in.get("/entities/Nonsense")
    assert response.status_code == 404
    assert "No entity class" in html_of(response)


# ---- The table --------------------------------------------------------------------------------

def test_table_shows_default_columns_with_links(signed_in, sample):
    response = signed_in.get("/entities/Sample")
    html = html_of(response)
    assert response.status_code == 200
    headers = re.findall(r'<th scope="col"[^>]*>\s*<a href="[^"]*"[^>]*>([^<▲▼]+)', html)
    assert [header.strip() for header in headers] == [
        "ID", "Name", "Barcode", "Status", "Amount", "Location", "Expiry date"]
    assert row_ids(response) == [sample["id"]]
    assert "<td>Broth</td>" in html and re.search(r'<td class="(fit-\d+ )?num">2.5</td>', html)
    assert "Showing 1–1 of 1" in html


def test_filter_finds_by_field_and_attribute(signed_in, api):
    save(api, {"eClass": "Sample", "name": "A", "attributes": {"ph": 5}},
         {"eClass": "Sample", "name": "B", "attributes": {"ph": 8}},
         {"eClass": "Sample", "name": "C"})
    by_name = signed_in.get("/entities/Sample", query_string={"filter": "name eq 'B'"})
    assert by_name.status_code == 200
    assert [cell for cell in re.findall(r"<td>([ABC])</td>", html_of(by_name))] == ["B"]
    by_attribute = signed_in.get("/entities/Sample",
                               query_string={"filter": "attributes.ph gt 6 or name eq 'A'"})
    assert re.findall(r"<td>([ABC])</td>", html_of(by_attribute)) == ["A", "B"]
    assert 'value="attributes.ph gt 6 or name eq &#39;A&#39;"' in html_of(by_attribute)


@pytest.mark.parametrize("headers", [{}, HTMX])
def test_filter_error_is_inline(signed_in, sample, headers):
    response = signed_in.get("/entities/Sample", query_string={"filter": "name eq"},
                           headers=headers)
    html = html_of(response)
    assert response.status_code == 400
    assert re.search(r'<p class="field-error" id="filter-error" role="alert">'
                     r'Unexpected end of filter at position 7</p>', html)
    assert 'aria-invalid="true"' in html and 'value="name eq"' in html
    assert 'id="entity-table"' not in html
    assert ("<html" in html) is not bool(headers)


def test_unknown_column_is_an_inline_error(signed_in, sample):
    response = signed_in.get("/entities/Sample", query_string={"columns": "name,nonsense"})
    assert response.status_code == 400
    assert "Unknown field &#39;nonsense&#39;" in html_of(response)


def test_chosen_columns_and_attribute_columns(signed_in, sample):
    response = signed_in.get("/entities/Sample",
                           query_string=[("columns", "NAME"), ("columns", "barcode"),
                                         ("attribute", "ph")])
    html = html_of(response)
    headers = re.findall(r'<th scope="col"[^>]*>\s*<a href="[^"]*"[^>]*>([^<▲▼]+)', html)
    assert [header.strip() for header in headers] == ["ID", "Name", "Barcode", "attributes.ph"]
    assert re.search(r'<td class="(fit-\d+ )?num">7.2</td>', html)
    # The picker and every link keep the choice, canonical and comma-joined.
    assert 'value="attributes.ph" checked' in html and 'value="name" checked' in html
    assert "columns=name,barcode,attributes.ph" in unescape(html)


def test_sortable_headers_toggle_and_keep_state(signed_in, api):
    save(api, *({"eClass": "Sample", "name": name} for name in ("b", "c", "a")))
    ascending = signed_in.get("/entities/Sample",
                            query_string={"orderby": "name asc", "filter": "name ne 'x'"})
    names = re.findall(r"<td>([abc])</td>", html_of(ascending))
    assert names == ["a", "b", "c"]
    html = unescape(html_of(ascending))
    assert '<th scope="col" aria-sort="ascending">' in html
    assert "/entities/Sample?filter=name+ne+'x'&orderby=name+desc" in html.replace("%27", "'")
    descending = signed_in.get("/entities/Sample", query_string={"orderby": "name desc"})
    assert re.findall(r"<td>([abc])</td>", html_of(descending)) == ["c", "b", "a"]


def test_paging_through_a_large_class_with_htmx(signed_in, api):
    save(api, *({"eClass": "Sample", "name": f"S{number:03d}"} for number in range(60)))
    first = signed_in.get("/entities/Sample", query_string={"orderby": "name"})
    assert len(row_ids(first)) == 50
    assert "Showing 1–50 of 60" in html_of(first)
    assert 'id="previous-page"' not in html_of(first)
    following = re.search(r'id="next-page" rel="next" href="([^"]+)" hx-get="([^"]+)"',
                          html_of(first))
    assert following.group(1) == following.group(2)
    url = unescape(following.group(1))
    query = parse_qs(urlsplit(url).query)
    token = query.pop("skiptoken")[0]  # the keyset position after row 50 (issue 24)
    assert query == {"orderby": ["name"], "skip": ["50"]}
    second = signed_in.get(url, headers=HTMX)
    html = html_of(second)
    assert second.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<section class="card" id="entity-browser"')
    assert "HX-Request" in second.headers["Vary"]
    assert len(row_ids(second)) == 10 and "Showing 51–60 of 60" in html
    assert 'id="next-page"' not in html
    assert 'id="previous-page" rel="prev" href="/entities/Sample?orderby=name"' in html
    assert second.headers["HX-Push-Url"] == (
        f"/entities/Sample?orderby=name&skip=50&skiptoken={token}")


@pytest.mark.parametrize("token", ["not-a-token", "eyJ4IjogMX0"])
def test_a_stale_page_position_shows_the_first_page(signed_in, api, token):
    save(api, *({"eClass": "Sample", "name": f"T{number:03d}"} for number in range(55)))
    response = signed_in.get("/entities/Sample", headers=HTMX, query_string={
        "orderby": "name", "skip": "50", "skiptoken": token})
    html = html_of(response)
    assert response.status_code == 200
    assert 'id="table-notice"' in html and "showing the first page" in html
    assert len(row_ids(response)) == 50 and "Showing 1–50 of 55" in html
    assert response.headers["HX-Push-Url"] == "/entities/Sample?orderby=name"


def test_htmx_pushes_the_canonical_address_of_a_submitted_query(signed_in, sample):
    query = [("filter", "name eq 'Broth'"), ("columns", "name"), ("columns", "status"),
             ("attribute", "")]
    response = signed_in.get("/entities/Sample", query_string=query, headers=HTMX)
    assert response.status_code == 200
    assert response.headers["HX-Push-Url"] == (
        "/entities/Sample?filter=name+eq+'Broth'&columns=name,status")


def test_bad_skip_is_an_inline_error(signed_in):
    response = signed_in.get("/entities/Sample", query_string={"skip": "-1"})
    assert response.status_code == 400
    assert 'id="table-error"' in html_of(response)


# ---- Detail -----------------------------------------------------------------------------------

def test_detail_shows_fields_attributes_audit_and_events(signed_in, sample):
    response = signed_in.get(f"/entities/Sample/{sample['id']}")
    html = html_of(response)
    assert response.status_code == 200
    assert "<dt>Amount</dt>\n    <dd>2.5</dd>" in html
    assert '<dt>Department</dt>\n    <dd><a href="/entities/Department/DEP00001">' in html
    assert "<tr><td><code>colour</code></td><td>amber</td></tr>" in html
    assert "<td><code>attributes.ph</code></td>" in html, "the audit trail shows each key"
    assert ('<strong>Created</strong> · <a href="/entities/User/alice">Alice Liddell</a> '
            '<span class="muted ref-id">alice</span>') in html
    assert 'id="edit-entity"' in html and 'id="clone-entity"' in html


def test_unknown_entity_is_a_404_page(signed_in):
    response = signed_in.get("/entities/Sample/SAM99999")
    assert response.status_code == 404
    assert "No Sample" in html_of(response)


# ---- Clone, notes, files ----------------------------------------------------------------------

def test_clone_makes_a_copy_and_shows_it(signed_in, api, sample):
    response = post_form(signed_in, f"/entities/Sample/{sample['id']}/clone")
    assert response.status_code == 303
    copy_id = response.headers["Location"].rsplit("/", 1)[1]
    assert copy_id != sample["id"]
    copy = fetch(api, "Sample", copy_id)
    assert (copy["name"], copy["originID"]) == ("Broth (copy)", sample["id"])
    assert copy["attributes"] == sample["attributes"]
    assert f"cloned as {copy_id}" in html_of(signed_in.get(response.headers["Location"]))


def test_add_a_note(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    response = post_form(signed_in, f"{path}/notes", {"content": "Smells of\nyeast"})
    assert response.status_code == 303
    assert response.headers["Location"] == f"{path}#notes"
    html = html_of(signed_in.get(path))
    assert '<p class="note-content">Smells of\nyeast</p>' in html
    assert "<strong>Note added</strong>" in html
    notes = api.get("/api/entity/Note", query_string={"$filter": f"subjectID eq '{sample['id']}'"})
    assert [note["content"] for note in notes.get_json()["data"]] == ["Smells of\nyeast"]


def test_add_a_note_with_htmx_returns_the_section(signed_in, sample):
    path = f"/entities/Sample/{sample['id']}/notes"
    response = post_form(signed_in, path, {"content": "First"}, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 201
    assert "<html" not in html
    assert html.lstrip().startswith('<section class="card" id="notes"')
    assert "Note added." in html and "First" in html
    empty = post_form(signed_in, path, {"content": "  "}, headers=HTMX)
    assert empty.status_code == 400
    assert "<html" not in html_of(empty)
    assert 'id="note-content-error">Write the note before adding it.' in html_of(empty)


def test_upload_a_file_and_download_it(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    content = b"time,od\n0,0.1\n1,0.4\n"
    response = signed_in.post(f"{path}/files", data={
        "csrf_token": hidden(html_of(signed_in.get(path)), "csrf_token"),
        "file": (io.BytesIO(content), "growth.csv", "text/csv")},
        content_type="multipart/form-data")
    assert response.status_code == 303
    assert response.headers["Location"] == f"{path}#files"
    detail = fetch(api, "Sample", sample["id"])
    [stored] = detail["files"]
    assert (stored["name"], stored["mediaType"], stored["size"]) == (
        "growth.csv", "text/csv", len(content))
    assert "FileAdded" in [event["kind"] for event in detail["events"]]
    html = html_of(signed_in.get(path))
    assert f'<a href="/api/file/{stored["id"]}" download="growth.csv">growth.csv</a>' in html
    with signed_in.get(f"/api/file/{stored['id']}") as download:
        assert download.data == content


def test_upload_without_a_file_is_an_inline_error(signed_in, sample):
    path = f"/entities/Sample/{sample['id']}"
    response = post_form(signed_in, f"{path}/files")
    assert response.status_code == 400
    assert 'id="file-input-error">Choose a file to upload.' in html_of(response)


# ---- Access -----------------------------------------------------------------------------------

def test_other_departments_entities_are_404(client, make_user, sample, other_department):
    make_user("dave", department_id=other_department)
    page_login(client, "dave")
    path = f"/entities/Sample/{sample['id']}"
    assert client.get(path).status_code == 404
    assert client.get(f"{path}/edit").status_code == 404
    assert post_form(client, f"{path}/notes", {"content": "hi"}).status_code == 404
    assert post_form(client, f"{path}/clone").status_code == 404
    assert row_ids(client.get("/entities/Sample")) == []


def test_read_only_entities_offer_no_changes(app, client, make_user, sample, other_department):
    make_user("dave", department_id=other_department)
    grant(app, "dave", DEFAULT_DEPARTMENT, "Read")
    page_login(client, "dave")
    path = f"/entities/Sample/{sample['id']}"
    html = html_of(client.get(path))
    assert 'id="read-only"' in html
    for form in ('id="edit-entity"', 'id="clone-entity"', 'id="note-form"', 'id="file-form"'):
        assert form not in html
    assert client.get(f"{path}/edit").status_code == 403
    assert post_form(client, f"{path}/edit", {"name": "x"}).status_code == 403
    assert post_form(client, f"{path}/notes", {"content": "hi"}).status_code == 403
