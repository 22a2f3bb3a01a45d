def test_health(client, db):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"
    assert response["X-Request-ID"]
