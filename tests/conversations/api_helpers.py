def create_conversation(client, external_id=None, title=""):
    body = {"title": title}
    if external_id:
        body["external_id"] = external_id
    response = client.post("/api/v1/conversations", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()
