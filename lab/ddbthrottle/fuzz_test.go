package ddbthrottle

import (
	"testing"
	"time"
)

// FuzzAdmit feeds arbitrary request bodies to the accounting: it never
// panics, and a body it cannot read is forwarded untouched (the server
// answers it).
func FuzzAdmit(f *testing.F) {
	f.Add("PutItem", []byte(`{"TableName":"t","Item":{"pk":{"S":"a"},"v":{"N":"-1.50e3"},"l":{"L":[{"NULL":true},{"M":{"x":{"BS":["AAE="]}}}]}}}`))
	f.Add("Query", []byte(`{"TableName":"t","KeyConditionExpression":"#p = :p AND sk < :s","ExpressionAttributeNames":{"#p":"pk"},"ExpressionAttributeValues":{":p":{"S":"a"}}}`))
	f.Add("BatchWriteItem", []byte(`{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}]}}`))
	f.Add("TransactWriteItems", []byte(`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}}]}`))
	f.Add("GetItem", []byte(`{`))
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		p, err := New("http://127.0.0.1:1", &Options{WriteUnits: 5, ReadUnits: 5, Now: func() time.Time { return time.Unix(0, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		_, _, _ = p.admit(op, body)
		_ = p.Stats()
	})
}
