-- single-row INSERT of a ~200 B document inheriting the default (weight 7 of 10)
INSERT INTO ins (doc) VALUES ('{"tenantId": "tenant-00043", "userId": "user-340517", "type": "cart", "status": "closed", "amount": 430.43, "tags": ["t9", "t20"], "note": "b6d767d2f8ed5d21a44b0e5886680cb9"}');
