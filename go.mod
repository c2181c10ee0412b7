module github.com/toolsift/toolsift

go 1.26.8

require (
	github.com/mark3labs/mcp-go v1.2.1
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/sahilm/fuzzy v0.1.3
	github.com/zalando/go-keyring v0.2.8
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/coreos/go-oidc/v3 v3.21.0 // indirect
	github.com/danieljoos/wincred v1.2.3 // indirect
	github.com/go-jose/go-jose/v4 v4.1.9 // indirect
	github.com/godbus/dbus/v5 v5.2.2 // indirect
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)

replace github.com/mark3labs/mcp-go => ./third_party/mcp-go
