def test_health(client, db):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"
    assert response["X-Request-ID"]


def test_admin_is_branded_and_links_the_console_styles(client, db):
    page = client.get("/admin/login/").content.decode()
    assert "PayPilot" in page
    assert "/static/paypilot/admin.css" in page


def test_openapi_schema_and_docs_are_served(client, db):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"BearerToken" in schema.content
    assert client.get("/docs").status_code == 200
