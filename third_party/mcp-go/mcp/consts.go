package mcp

const (
	ContentTypeText       = "text"
	ContentTypeImage      = "image"
	ContentTypeAudio      = "audio"
	ContentTypeLink       = "resource_link"
	ContentTypeResource   = "resource"
	ContentTypeToolUse    = "tool_use"
	ContentTypeToolResult = "tool_result"

	ElicitationModeForm = "form"
	ElicitationModeURL  = "url"
)
