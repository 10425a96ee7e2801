module github.com/enterprise-ai/eai-go

go 1.21
